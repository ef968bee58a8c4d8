/** Milliseconds on the machine's monotonic clock: the same in every process of one machine (Linux CLOCK_MONOTONIC). */
export const monoMs = (): number => Number(process.hrtime.bigint()) / 1e6;
