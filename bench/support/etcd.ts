/** The etcd column appears once an EtcdStore exists (see issue 3); until then it is left out. */
export async function startBenchEtcd(): Promise<null> {
  return null;
}
