package cpu

// PoolsFreed returns how many thread pools have been freed so far.
func PoolsFreed() int64 { return poolsFreed.Load() }
