package backend

import (
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
)

// SetAvailableMemory makes the memory checks see n bytes available until
// the test ends.
func SetAvailableMemory(t *testing.T, n uint64) {
	old := availableMemory
	availableMemory = func() (uint64, bool) { return n, true }
	t.Cleanup(func() { availableMemory = old })
}

// HaveOllamaExtras reports whether the linked ggml has the embedded
// provider's extra calls.
const HaveOllamaExtras = haveOllamaExtras

// LavapipeRefusal is the refusal for node t on a device taken to be Mesa's
// lavapipe.
func LavapipeRefusal(t *ggml.Tensor) error {
	p, err := bridge.View[bridge.Tensor](t).Ptr()
	if err != nil {
		return err
	}
	return bridge.Refusal("Vulkan0", p)
}

// LiveBackends counts the backends not yet freed, over every registry
// entry, for the check after the tests (TestMain).
func LiveBackends() int {
	regs.Lock()
	defer regs.Unlock()
	n := 0
	for _, r := range regs.m {
		n += r.backends
	}
	return n
}

// HaveUpstream reports whether the linked ggml is upstream's (2-D
// transfers, the mmap capability).
const HaveUpstream = haveUpstream

// OwnPool returns the thread pool CPU backend b computes on if it is b's
// own, else nil.
func OwnPool(b *Backend) any {
	if p, ok := b.pool.ref.(*ownPool); ok {
		return p
	}
	return nil
}

// OwnPoolFreed reports whether p, from OwnPool, was freed.
func OwnPoolFreed(p any) bool {
	op := p.(*ownPool)
	op.mu.Lock()
	defer op.mu.Unlock()
	return op.c == nil
}

// DataAddr returns the address ggml holds for t's memory (tensor->data):
// for a GPU's buffers, a device address or a placeholder.
func DataAddr(t *ggml.Tensor) uintptr {
	tc, err := tensorPtr(t)
	if err != nil {
		return 0
	}
	return uintptr(tc.data)
}

// RecorderSyncs returns how many events a backend has synchronized, while
// it lived, because it had recorded them (waitedEvents.syncRecorded).
func RecorderSyncs() int64 { return recorderSyncs.Load() }
