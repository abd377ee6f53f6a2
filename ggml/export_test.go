package ggml

// LiveCustomOps counts the custom ops whose handle is not yet deleted, for
// the leak test in package ggml_test.
func LiveCustomOps() int {
	n := 0
	liveHandles.Range(func(any, any) bool { n++; return true })
	return n
}

// CPUVariantEntries counts the CPU kernels' dispatched entry points and
// those that call the AVX-512 VNNI copy (0, 0 where there is one copy).
func CPUVariantEntries() (total, vnni int) { return cpuVariantEntries() }

// SetAvailableMemory makes NewContext see n bytes of memory available
// until the test ends.
func SetAvailableMemory(t interface{ Cleanup(func()) }, n uint64) {
	old := availableMemory
	availableMemory = func() (uint64, bool) { return n, true }
	t.Cleanup(func() { availableMemory = old })
}

// ConvIm2ColF16 reports whether Conv2D and Conv3D round b to f16 for an f32
// kernel too (upstream ggml).
const ConvIm2ColF16 = convIm2ColF16

// Nbytes, IsContiguous and IsContiguous1 are the Go versions of
// ggml_nbytes, ggml_is_contiguous and ggml_is_contiguous_1; the C-prefixed
// ones are ggml's, for comparing.
func Nbytes(t *Tensor) uint64       { return nbytesOf(t.c) }
func IsContiguous(t *Tensor) bool   { return isContiguousOf(t.c) }
func IsContiguous1(t *Tensor) bool  { return isContiguous1Of(t.c) }
func CNbytes(t *Tensor) uint64      { return cNbytes(t) }
func CIsContiguous(t *Tensor) bool  { return cIsContiguous(t) }
func CIsContiguous1(t *Tensor) bool { return cIsContiguous1(t) }

// PtrSet exposes ptrSet (Graph's mirror of ggml's hash set) to its test.
type PtrSet struct{ s ptrSet }

func NewPtrSet(hint int) *PtrSet     { return &PtrSet{newPtrSet(hint)} }
func (p *PtrSet) Add(a uintptr) bool { return p.s.addAddr(a) }
func (p *PtrSet) Has(a uintptr) bool { return p.s.hasAddr(a) }
func (p *PtrSet) Del(a uintptr)      { p.s.delAddr(a) }
func (p *PtrSet) Reset()             { p.s.reset() }
func (p *PtrSet) Live() int          { return p.s.live }
func (p *PtrSet) Used() int          { return p.s.used }
func (p *PtrSet) Slots() int         { return len(p.s.slots) }

// HaveUpstream reports whether the linked ggml is upstream's (the system
// provider), with the ops and types only it has.
const HaveUpstream = haveUpstream

// GoUsedMem is the context's own count of its pool, which ops check
// before ggml's constructors run.
func GoUsedMem(c *Context) uint64 { return c.used.Load() }

// OwnAVX512Kernels reports whether go-ggml's own AVX-512 CPU kernels run
// (out_prod, softmax, batched flash attention).
func OwnAVX512Kernels() bool { return ownAVX512Kernels() }
