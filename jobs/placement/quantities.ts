/** Human text for the quantities in decisions and shortfall messages. */
export function cpuText(millis: number): string {
  return millis % 1000 === 0 ? `${millis / 1000} cpu` : `${millis}m cpu`;
}

export function memoryText(bytes: number): string {
  for (const [unit, size] of [['Gi', 1024 ** 3], ['Mi', 1024 ** 2], ['Ki', 1024]] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  }
  if (bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)}Mi`;
  return `${bytes}B`;
}

export interface Resources {
  cpuMillis: number;
  memoryBytes: number;
}

export function resourcesText(r: Resources): string {
  return `${cpuText(r.cpuMillis)}, ${memoryText(r.memoryBytes)} memory`;
}

export function addResources(a: Resources, b: Resources, sign = 1): Resources {
  return { cpuMillis: a.cpuMillis + sign * b.cpuMillis, memoryBytes: a.memoryBytes + sign * b.memoryBytes };
}

export const noResources: Resources = { cpuMillis: 0, memoryBytes: 0 };
