package ggml

/*
#include "goggml.h"
*/
import "C"

import "unsafe"

// ptrSet is a set of C tensor addresses: the Go mirror of a graph's hash
// set (Graph.seen). It is open addressing with linear probing over a
// power-of-two table, deleted entries left as tombstones, and it replaces a
// Go map whose hashing and allocation cost a tenth of graph building.
// Addresses are C memory, so holding them as integers hides nothing from
// the collector.
type ptrSet struct {
	slots []uintptr // emptySlot, deletedSlot or an address
	live  int       // addresses in the set
	used  int       // addresses and tombstones: what fills the probes
}

const (
	emptySlot   uintptr = 0
	deletedSlot uintptr = 1 // no ggml_tensor lives at address 1
)

// newPtrSet returns a set with room for about hint addresses before it
// grows.
func newPtrSet(hint int) ptrSet {
	n := 16
	for n < 2*hint {
		n <<= 1
	}
	return ptrSet{slots: make([]uintptr, n)}
}

// slot returns the index where p is, or where it would go (the first
// tombstone on its probe, else the empty slot that ends it).
func (s *ptrSet) slot(p uintptr) (i int, found bool) {
	mask := len(s.slots) - 1
	// Fibonacci hashing of the address without its low (aligned) bits.
	i = int(((uint64(p) >> 4) * 0x9E3779B97F4A7C15) >> 32 & uint64(mask))
	free := -1
	for {
		switch v := s.slots[i]; v {
		case p:
			return i, true
		case emptySlot:
			if free >= 0 {
				return free, false
			}
			return i, false
		case deletedSlot:
			if free < 0 {
				free = i
			}
		}
		i = (i + 1) & mask
	}
}

func (s *ptrSet) ensureTable() {
	if s.slots == nil {
		*s = newPtrSet(0)
	}
}

// has reports whether t is in the set.
func (s *ptrSet) has(t *C.struct_ggml_tensor) bool { return s.hasAddr(uintptr(unsafe.Pointer(t))) }

// add puts t in the set and reports whether it was new.
func (s *ptrSet) add(t *C.struct_ggml_tensor) bool { return s.addAddr(uintptr(unsafe.Pointer(t))) }

// del takes t out of the set.
func (s *ptrSet) del(t *C.struct_ggml_tensor) { s.delAddr(uintptr(unsafe.Pointer(t))) }

func (s *ptrSet) hasAddr(p uintptr) bool {
	if s.live == 0 {
		return false
	}
	_, ok := s.slot(p)
	return ok
}

func (s *ptrSet) addAddr(p uintptr) bool {
	s.ensureTable()
	i, ok := s.slot(p)
	if ok {
		return false
	}
	if s.slots[i] == emptySlot {
		s.used++
	}
	s.slots[i] = p
	s.live++
	if 4*s.used >= 3*len(s.slots) {
		s.rehash()
	}
	return true
}

func (s *ptrSet) delAddr(p uintptr) {
	if s.live == 0 {
		return
	}
	if i, ok := s.slot(p); ok {
		s.slots[i] = deletedSlot
		s.live--
	}
}

// reset empties the set, keeping its table.
func (s *ptrSet) reset() {
	clear(s.slots)
	s.live, s.used = 0, 0
}

// rehash moves the addresses to a table twice the size, or the same size
// when tombstones were what filled it.
func (s *ptrSet) rehash() {
	n := len(s.slots)
	if 2*s.live >= n/2 {
		n *= 2
	}
	old := s.slots
	*s = ptrSet{slots: make([]uintptr, n)}
	for _, p := range old {
		if p != emptySlot && p != deletedSlot {
			i, _ := s.slot(p)
			s.slots[i] = p
			s.live++
			s.used++
		}
	}
}
