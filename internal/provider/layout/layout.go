// Package layout names the places where go-ggml's forwarding headers and
// sources look for the embedded provider's files, for the two programs
// that need them: the generator that writes the forwarding files
// (internal/provider/gen) and build/cgoenv, which tells a user whether a
// build from their module finds the provider. Pure Go; nothing here
// depends on the provider.
package layout

const (
	// Module is the embedded provider's module.
	Module = "github.com/ollama/ollama"
	// GGML is ggml's directory in Module.
	GGML = "ml/backend/ggml/ggml"
	// SelfDepth is the number of elements of go-ggml's module path.
	SelfDepth = 3
	// MaxForkDepth bounds the module path of a fork of go-ggml whose
	// module cache the forwarding files find beside it.
	MaxForkDepth = 8
	// MaxClimb bounds how many directories above go-ggml the forwarding
	// files look for a module cache (CacheDirs).
	MaxClimb = 16
	// LinkDir is a checkout's link to the provider's GGML directory,
	// relative to internal/provider (make setup creates it).
	LinkDir = "provider-ggml"
)

// CacheDirs are the module caches looked for in each directory above
// go-ggml, nearer directories first: Go's default ($HOME/go/pkg/mod,
// /go/pkg/mod) and a GOPATH's.
var CacheDirs = []string{"go/pkg/mod", "pkg/mod"}

// IncludeDirs are the provider's include directories, relative to GGML,
// that its sources and go-ggml's need: the -I lines of a build that finds
// the provider through CGO_CPPFLAGS.
var IncludeDirs = []string{"include", "src", "src/ggml-cpu", "src/ggml-cpu/amx", "src/ggml-cpu/llamafile"}
