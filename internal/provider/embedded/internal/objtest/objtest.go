// Package objtest reads the C objects of a compiled cgo package, for the
// tests that check what a CPU variant's objects export (package cpuvnni's
// and cpuamx's): code compiled for a higher CPU level must hold no symbol
// the linker could merge with the default level's, and no code that runs
// at start.
package objtest

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Object is what one C object of a package defines.
type Object struct {
	Name string
	// Defined holds the global, weak and unique symbols it defines.
	Defined []string
	// StartCode names its sections of code that runs at start
	// (.init_array, .ctors and the like).
	StartCode []string
	// TLS reports thread-local data (.tdata, .tbss).
	TLS bool
	// TLSVars are its thread-local variables, local ones too.
	TLSVars []TLSVar
}

// TLSVar is a thread-local variable of an object: its offset in its
// section and the section's alignment.
type TLSVar struct {
	Name         string
	Offset       uint64
	SectionAlign uint64
}

// Objects returns the ELF objects of the compiled package pkg (an import
// path), read from its archive in the build cache (go list -export).
func Objects(pkg string) ([]Object, error) {
	out, err := exec.Command("go", "list", "-export", "-f", "{{.Export}}", pkg).Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export %s: %w", pkg, err)
	}
	members, err := arMembers(strings.TrimSpace(string(out)))
	if err != nil {
		return nil, err
	}
	var objs []Object
	for name, data := range members {
		if !strings.HasSuffix(name, ".o") || !bytes.HasPrefix(data, []byte(elf.ELFMAG)) {
			continue // the Go object and the package's export data
		}
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		o := Object{Name: name}
		for _, sec := range f.Sections {
			switch {
			case sec.Name == ".init_array" || sec.Name == ".preinit_array" || sec.Name == ".ctors" ||
				strings.HasPrefix(sec.Name, ".init_array.") || strings.HasPrefix(sec.Name, ".ctors."):
				o.StartCode = append(o.StartCode, sec.Name)
			case sec.Name == ".tdata" || sec.Name == ".tbss":
				o.TLS = true
			}
		}
		syms, err := f.Symbols()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_TLS && s.Section < elf.SectionIndex(len(f.Sections)) {
				o.TLSVars = append(o.TLSVars, TLSVar{s.Name, s.Value, f.Sections[s.Section].Addralign})
			}
			bind := elf.ST_BIND(s.Info)
			if s.Section == elf.SHN_UNDEF || (bind != elf.STB_GLOBAL && bind != elf.STB_WEAK && bind != elf.STB_LOOS) {
				continue // STB_LOOS is STB_GNU_UNIQUE
			}
			o.Defined = append(o.Defined, s.Name)
		}
		objs = append(objs, o)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("no C objects in the archive of %s", pkg)
	}
	return objs, nil
}

// arMembers reads the members of a Unix ar archive (what the go command
// writes for a package).
func arMembers(path string) (map[string][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, []byte("!<arch>\n")) {
		return nil, fmt.Errorf("%s is not an archive", path)
	}
	members := map[string][]byte{}
	for p := 8; p+60 <= len(data); {
		hdr := data[p : p+60]
		name := strings.TrimRight(strings.TrimSpace(string(hdr[:16])), "/")
		size, err := strconv.Atoi(strings.TrimSpace(string(hdr[48:58])))
		if err != nil {
			return nil, fmt.Errorf("member header %q: %w", hdr, err)
		}
		p += 60
		if p+size > len(data) {
			return nil, fmt.Errorf("member %s runs past the end", name)
		}
		members[name] = data[p : p+size]
		p += size + size%2
	}
	return members, nil
}
