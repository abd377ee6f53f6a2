//go:build !asan

package opt_test

// asanEnabled reports a build with -asan, whose allocator and shadow
// memory an address-space limit would starve.
const asanEnabled = false
