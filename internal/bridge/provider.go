package bridge

/*
#include "goggml.h"
*/
import "C"

import (
	"fmt"

	gg "github.com/go-ggml/ggml/internal/provider"
)

// UpstreamVersion is the upstream ggml release the system provider is
// pinned to (GOGGML_UPSTREAM_VERSION in goggml.h).
var UpstreamVersion = C.GoString(C.goggml_upstream_version())

// NeedsUpstream is the one text of every "only upstream ggml has this"
// error: what needs upstream ggml, the build tag, the pinned release and
// the ggml this binary links. Callers wrap it in their error kind
// (ErrUnsupported); what may end with a reason ("X, which only upstream
// ggml has").
func NeedsUpstream(what string) string {
	return fmt.Sprintf("%s needs upstream ggml: build with -tags ggml_system (upstream ggml %s); this binary links %s",
		what, UpstreamVersion, gg.Provider)
}
