// Package life holds the lifetimes that every go-ggml handle rests on,
// in pure Go: Life (an object that work in flight may use, closed once and
// freed after its last use), Holds (what one piece of work holds), Link
// (a connection to an RPC server whose objects fail together), the error
// kinds of handles, Catch (a ggml abort on the calling goroutine turned
// into an error) and the opt-in leak report. It imports nothing of
// go-ggml and does not depend on the provider; internal/bridge builds the
// handles' shared views on it.
package life
