package life

import "fmt"

// AssertPanic is the panic that go-ggml's abort callback (package ggml's
// goggmlAbort) raises on the goroutine whose C call hit a GGML_ASSERT or
// GGML_ABORT. Err is the *ggml.AssertError that Catch reports.
type AssertPanic struct{ Err error }

// Catch turns an AssertPanic into its error, stored in *errp. Use it as
// `defer life.Catch(&err)`; other panics propagate.
func Catch(errp *error) {
	if r := recover(); r != nil {
		p, ok := r.(AssertPanic)
		if !ok {
			panic(r)
		}
		err := p.Err
		if e := linkAbort(p.Err); e != nil {
			err = e // an RPC connection's failure (Link.OnAbort)
		}
		if *errp == nil {
			*errp = err
		} else {
			*errp = fmt.Errorf("%w (after: %v)", err, *errp)
		}
	}
}
