package life

// NoCopy makes go vet's copylocks check report copies of handle structs,
// and makes them incomparable: handles are used through pointers. Handles
// carry it as a field named _.
type NoCopy struct{ _ [0]func() }

// Lock is there for go vet's copylocks check; it does nothing.
func (*NoCopy) Lock() {}

// Unlock is there for go vet's copylocks check; it does nothing.
func (*NoCopy) Unlock() {}
