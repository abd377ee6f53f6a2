package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"
)

// The embedded provider's sources are compiled by go-ggml's own cgo
// packages, internal/provider/embedded/core and .../cpu, so that go-ggml
// (not the environment, not the provider's package) sets the CPU flags.
// Each package holds one forwarding source per provider source: a file
// that includes the provider's file by its path relative to itself, at
// each place search.go names.

// srcGroup is one cgo package of forwarding sources.
type srcGroup struct {
	Dir     string   // package directory, relative to internal/provider
	Globs   []string // provider files, relative to ggml/src
	Include []string // include directories, relative to ggml/ (the -I lines)
	Build   string   // extra build constraint of the package's files, or ""
	// Rename is the prefix that the external functions of the variant
	// sources (variantSources) get in this package: in the base package
	// when it is built with GOGGML_CPU_VARIANTS, in a variant package
	// always. "" for none.
	Rename string
	// Prelude is a line each forwarding source of the package has before
	// its include, or "".
	Prelude string
	// Forward are provider files (relative to ggml/src) that a source of
	// ours includes: each gets a forwarding header, fwd_<name>.h.
	Forward []string
}

// The CPU variants. Two provider files keep every function of theirs
// internal but their entry points: llamafile's sgemm (tinyBLAS, the matrix
// kernels for f32, f16, bf16, q8_0 and q4_0 products; C++ in an anonymous
// namespace) and the x86 quantized dot products and row quantizers (C,
// static inline helpers). Those two are compiled a second time, for
// x86-64-v4 with AVX-512 VNNI, in package cpuvnni. Each copy's entry
// points get a prefix (goggml_base_, goggml_avx512vnni_), and
// embedded/cpu/variants.c defines the unprefixed functions that the rest
// of ggml-cpu calls: each calls the copy chosen at start by what the CPU
// has. variants_gen.h lists the entry points.
//
// The x86 kernels of the repacked weight layouts (arch/x86/repack.cpp:
// the GEMV and GEMM of interleaved q4_0, q4_K, q2_K and iq4_nl blocks, and
// the quantizers of their inputs, static helpers but for the entry points)
// are the third variant source: CPU_REPACK, the extra buffer type that
// re-lays weights for them, runs them for every repacked product.
var variantSources = []string{"ggml-cpu/llamafile/sgemm.cpp", "ggml-cpu/arch/x86/quants.c", "ggml-cpu/arch/x86/repack.cpp"}

// variantBuild is the constraint of the variant packages: the default
// level on linux/amd64. Linux only: TestVariantSymbols reads ELF objects,
// and no other platform's objects (Mach-O, Apple's libc++) were checked
// for symbols the linker could merge between the copies.
const variantBuild = " && linux && amd64 && !ggml_native && !ggml_portable"

var srcGroups = []srcGroup{
	{
		Dir:     "embedded/core",
		Globs:   []string{"*.c", "*.cpp"},
		Include: []string{"include", "src", "src/ggml-cpu"},
	},
	{
		Dir: "embedded/cpu",
		Globs: []string{"ggml-cpu/*.c", "ggml-cpu/*.cpp", "ggml-cpu/llamafile/*.cpp",
			"ggml-cpu/arch/x86/*.c", "ggml-cpu/arch/x86/*.cpp",
			"ggml-cpu/arch/arm/*.c", "ggml-cpu/arch/arm/*.cpp"},
		Include: []string{"include", "src", "src/ggml-cpu", "src/ggml-cpu/amx", "src/ggml-cpu/llamafile"},
		Rename:  "goggml_base_",
	},
	{
		Dir:     "embedded/cpuvnni",
		Globs:   variantSources,
		Include: []string{"include", "src", "src/ggml-cpu", "src/ggml-cpu/llamafile"},
		Build:   variantBuild,
		Rename:  "goggml_avx512vnni_",
	},
	{
		// ggml's AMX buffer type and its kernels (amx/amx.cpp,
		// amx/mmq.cpp), compiled for x86-64-v4 with AVX-512 VNNI and AMX
		// in package cpuamx; package cpu registers the buffer type at
		// start where the CPU and the OS grant AMX (amx.cpp in package
		// cpu, ours). The kernels (amx/mmq.cpp) are not forwarded: our
		// amx_mmq.cpp in that package includes them, with go-ggml's own
		// driver in place of the provider's.
		Dir:     "embedded/cpuamx",
		Globs:   []string{"ggml-cpu/amx/amx.cpp"},
		Include: []string{"include", "src", "src/ggml-cpu", "src/ggml-cpu/amx"},
		Build:   variantBuild,
		// The instruction sets, whatever a user's CGO_CFLAGS say.
		Prelude: `#include "amx_target.h"`,
		// provider_mmq.h includes the kernels through this.
		Forward: []string{"ggml-cpu/amx/mmq.cpp"},
	},
}

// hooks are go-ggml's own functions that take a provider function's place
// where one provider file calls it: that file's forwarding source renames
// the calls (and the declaration it includes) with a #define before the
// include, and ours, in the same package, does its work and calls the
// provider's function where it does not apply.
var hooks = map[string]string{
	// embedded/cpu/outprod.c: f32 OUT_PROD, embedded/cpu/softmax.c:
	// SOFT_MAX's pass before the exponentials, and embedded/cpu/fattn.c:
	// FLASH_ATTN_EXT for batches of queries, with AVX-512 where the CPU
	// has it and the package was compiled for AVX2.
	"ggml-cpu/ggml-cpu.c": "#define ggml_compute_forward_out_prod goggml_compute_forward_out_prod\n" +
		"#define ggml_compute_forward_soft_max goggml_compute_forward_soft_max\n" +
		"#define ggml_compute_forward_flash_attn_ext goggml_compute_forward_flash_attn_ext",
}

// entryPoint is an external function of a variant source, with the kind
// of its signature (the X-macro of variants_gen.h that declares it).
type entryPoint struct{ Kind, Name string }

// entryPoints returns the external functions that the provider's file rel
// (a variant source) defines: sgemm's one, or every non-static function
// defined at the start of a line. A signature of another kind is an error:
// the dispatcher (variants.c) knows five.
func entryPoints(src, rel string) ([]entryPoint, error) {
	if strings.HasSuffix(rel, "sgemm.cpp") {
		return []entryPoint{{"GOGGML_SGEMM", "llamafile_sgemm"}}, nil
	}
	data, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	var eps []entryPoint
	def := regexp.MustCompile(`^(?:void|size_t|float|int|bool|int64_t)\s+\**(\w+)\s*\((.*)$`)
	for _, line := range strings.Split(string(data), "\n") {
		m := def.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "void ggml_vec_dot_") && strings.HasPrefix(m[2], "int n, float * GGML_RESTRICT s, size_t bs,"):
			eps = append(eps, entryPoint{"GOGGML_VEC_DOT", m[1]})
		case strings.HasPrefix(line, "void quantize_row_") && strings.HasPrefix(m[2], "const float * GGML_RESTRICT x, void * GGML_RESTRICT"):
			eps = append(eps, entryPoint{"GOGGML_QUANTIZE_ROW", m[1]})
		case (strings.HasPrefix(line, "void ggml_gemv_") || strings.HasPrefix(line, "void ggml_gemm_")) &&
			strings.HasPrefix(m[2], "int n, float * GGML_RESTRICT s, size_t bs, const void * GGML_RESTRICT vx, const void * GGML_RESTRICT vy, int nr, int nc)"):
			eps = append(eps, entryPoint{"GOGGML_GEMX", m[1]})
		case strings.HasPrefix(line, "void ggml_quantize_mat_") && strings.HasPrefix(m[2], "const float * GGML_RESTRICT x, void * GGML_RESTRICT vy, int64_t k)"):
			eps = append(eps, entryPoint{"GOGGML_QUANTIZE_MAT", m[1]})
		default:
			return nil, fmt.Errorf("%s: an external function of a kind variants.c does not dispatch: %s", rel, line)
		}
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("%s: no external functions found", rel)
	}
	return eps, nil
}

// renames returns the #define lines that give rel's entry points prefix.
func renames(eps []entryPoint, prefix string) string {
	var b strings.Builder
	for i, ep := range eps {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "#define %s %s%s", ep.Name, prefix, ep.Name)
	}
	return b.String()
}

var variantsTmpl = template.Must(template.New("h").Parse(`// Code generated by go generate ./internal/provider; DO NOT EDIT.
//
// The entry points of the provider files compiled once per CPU variant
// (see variants.c), as X-macros: GOGGML_SGEMM(name), GOGGML_VEC_DOT(name),
// GOGGML_QUANTIZE_ROW(name), GOGGML_GEMX(name), GOGGML_QUANTIZE_MAT(name).
// Names only: no ggml code.
{{range .}}
{{.Kind}}({{.Name}})
{{- end}}
`))

// embeddedBuild is the build constraint of every file of the embedded
// packages: the embedded provider everywhere but darwin/arm64, where the
// provider's own packages are used (they also build Metal, and Apple's
// compiler targets the machine's CPU without flags).
const embeddedBuild = "!ggml_system && !(darwin && arm64)"

var srcTmpl = template.Must(template.New("c").Parse(`// Code generated by go generate ./internal/provider; DO NOT EDIT.
{{if .Build}}
//go:build {{.Build}}
{{end}}
// Forwarding {{.Kind}}: go-ggml carries no ggml source. This file {{.Verb}}
// the embedded provider's src/{{.Name}}
// ({{.Module}}@{{.Version}}){{if .Build}} with the flags of this package{{end}},
// found at a place that internal/provider/gen/search.go names.
{{- if .Prelude}}
{{.Prelude}}
{{- end}}
{{- range $i, $p := .Paths}}
#{{if $i}}elif{{else}}if{{end}} __has_include("{{$p}}")
#include "{{$p}}"
{{- end}}
#elif __has_include(<{{.Name}}>)
#include <{{.Name}}>
#else
#error "{{.Error}}"
#endif
`))

var pathsTmpl = template.Must(template.New("go").Parse(`// Code generated by go generate ./internal/provider; DO NOT EDIT.

//go:build {{.Build}}

package {{.Package}}

// The provider's include directories, at each place gen/search.go looks
// for the provider (the module cache beside go-ggml, a checkout's link, the
// cache beside a fork, a go/pkg/mod or pkg/mod above go-ggml). The C
// compiler skips a directory that does not exist.

/*
{{- range .Include}}
#cgo CPPFLAGS: -I${SRCDIR}/{{.}}
{{- end}}
*/
import "C"
`))

// forwardFile returns the forwarding file in package dir of the provider's
// src/rel: a source compiled with the package's flags under build, or, for
// build "", a header that a source of ours includes.
func forwardFile(dir, version, rel, build, prelude string) ([]byte, error) {
	kind, verb := "source", "compiles"
	if build == "" {
		kind, verb = "header", "includes"
	}
	var buf bytes.Buffer
	err := srcTmpl.Execute(&buf, map[string]any{
		"Build": build, "Kind": kind, "Verb": verb, "Name": rel, "Prelude": prelude,
		"Module": providerModule, "Version": version,
		"Paths": searchPaths(dir, version, "src/"+rel),
		"Error": notFound(version, "src/"+rel),
	})
	return buf.Bytes(), err
}

// fwdName is the forwarding file's name for the provider's src/rel:
// fwd_<path with _>, so that no file here bears a ggml source's name and
// the arch directories' files do not collide; ext replaces rel's extension
// where it is not "".
func fwdName(rel, ext string) string {
	name := "fwd_" + strings.NewReplacer("/", "_", "-", "_").Replace(strings.TrimPrefix(rel, "ggml-cpu/"))
	if ext != "" {
		name = strings.TrimSuffix(name, path.Ext(name)) + ext
	}
	return name
}

// archBuild returns the extra build constraint of a provider source in a
// package whose files have the constraint build.
func archBuild(build, rel string) string {
	arch := ""
	switch {
	case strings.Contains(rel, "/arch/x86/"):
		arch = "amd64"
	case strings.Contains(rel, "/arch/arm/"):
		arch = "arm64"
	}
	if arch == "" || strings.Contains(build, arch) {
		return ""
	}
	return " && " + arch
}

func forwardSources(files map[string][]byte, version string) error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", providerModule).Output()
	if err != nil {
		return fmt.Errorf("go list -m %s: %v", providerModule, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return fmt.Errorf("%s is not downloaded: run go mod download", providerModule)
	}
	src := filepath.Join(dir, filepath.FromSlash(providerGGML), "src")
	var all []entryPoint // of the variant sources
	for _, g := range srcGroups {
		var rels []string
		for _, glob := range g.Globs {
			names, err := filepath.Glob(filepath.Join(src, filepath.FromSlash(glob)))
			if err != nil {
				return err
			}
			for _, n := range names {
				rel, err := filepath.Rel(src, n)
				if err != nil {
					return err
				}
				rels = append(rels, filepath.ToSlash(rel))
			}
		}
		if len(rels) == 0 {
			return fmt.Errorf("no provider sources for %s under %s", g.Dir, src)
		}
		sort.Strings(rels)
		for _, rel := range rels {
			prelude := g.Prelude
			if g.Rename != "" && slices.Contains(variantSources, rel) {
				eps, err := entryPoints(src, rel)
				if err != nil {
					return err
				}
				r := renames(eps, g.Rename)
				if g.Build == "" {
					// The base copy is renamed only where variants exist.
					r = "#if defined(GOGGML_CPU_VARIANTS)\n" + r + "\n#endif"
					all = append(all, eps...)
				}
				prelude = strings.TrimPrefix(prelude+"\n"+r, "\n")
			}
			if h, ok := hooks[rel]; ok {
				if prelude != "" {
					h += "\n" + prelude
				}
				prelude = h
			}
			data, err := forwardFile(g.Dir, version, rel, embeddedBuild+g.Build+archBuild(g.Build, rel), prelude)
			if err != nil {
				return err
			}
			files[filepath.Join(filepath.FromSlash(g.Dir), fwdName(rel, ""))] = data
		}
		for _, rel := range g.Forward {
			data, err := forwardFile(g.Dir, version, rel, "", "")
			if err != nil {
				return err
			}
			files[filepath.Join(filepath.FromSlash(g.Dir), fwdName(rel, ".h"))] = data
		}
		var inc []string
		for _, i := range g.Include {
			inc = append(inc, searchPaths(g.Dir, version, i)...)
		}
		var buf bytes.Buffer
		err := pathsTmpl.Execute(&buf, map[string]any{
			"Build": embeddedBuild + g.Build, "Package": path.Base(g.Dir), "Include": inc,
			"Module": providerModule, "Version": version,
		})
		if err != nil {
			return err
		}
		files[filepath.Join(filepath.FromSlash(g.Dir), "paths_gen.go")] = buf.Bytes()
	}
	var buf bytes.Buffer
	if err := variantsTmpl.Execute(&buf, all); err != nil {
		return err
	}
	files[filepath.Join("embedded", "cpu", "variants_gen.h")] = buf.Bytes()
	return nil
}
