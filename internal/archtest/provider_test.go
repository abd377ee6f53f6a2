package archtest

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/rpc"
	"github.com/go-ggml/ggml/sched"
)

// providerCall is one row of docs/providers.md's table: a call only one
// provider has, and how to make it (an error, or nil).
type providerCall struct {
	name   string
	system bool // only the system provider has it, else only the embedded one
	call   func(t *testing.T) error
}

// TestProviderTable: docs/providers.md's "What differs per provider" lists
// exactly these calls; on the provider without a call it is ErrUnsupported
// naming the provider it needs, and on the provider with it, it is not.
func TestProviderTable(t *testing.T) {
	haveSystem := strings.HasPrefix(ggml.Provider(), "system")
	cpu, err := backend.InitByName("CPU", "")
	require.NoError(t, err)
	defer cpu.Close()
	ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer ctx.Close()
	x := ctx.NewTensor(ggml.TypeF32, 16)
	buf, err := backend.AllocContextTensors(ctx, cpu)
	require.NoError(t, err)
	defer buf.Close()
	rows := backend.Rows2D{Size: 4, Count: 2, TensorStride: 8, DataStride: 4}
	calls := []providerCall{
		{"backend.TensorSet2D", true, func(*testing.T) error { return backend.TensorSet2D(x, make([]byte, 8), rows) }},
		{"backend.TensorGet2D", true, func(*testing.T) error { return backend.TensorGet2D(x, make([]byte, 8), rows) }},
		{"Backend.SetTensor2DAsync", true, func(*testing.T) error {
			defer cpu.Synchronize()
			return cpu.SetTensor2DAsync(x, make([]byte, 8), rows)
		}},
		{"Backend.GetTensor2DAsync", true, func(*testing.T) error {
			defer cpu.Synchronize()
			return cpu.GetTensor2DAsync(x, make([]byte, 8), rows)
		}},
		{"backend.NewMetaDevice", true, func(*testing.T) error {
			_, err := backend.NewMetaDevice([]*backend.Device{cpu.Device()}, func(*ggml.Tensor) (backend.Split, error) { return backend.Mirrored(), nil })
			return err
		}},
		{"rpc.Connect", true, func(*testing.T) error {
			_, err := rpc.Connect("127.0.0.1:1", nil) // nobody there: ErrConnect where RPC exists
			return err
		}},
		{"Context.Col2Im1D", true, func(*testing.T) error {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true})
			if err != nil {
				return err
			}
			defer c.Close()
			c.Col2Im1D(c.NewTensor(ggml.TypeF32, 6, 4), 1, 2, 0)
			return c.Err()
		}},
		{"ggml.Quantize", true, func(*testing.T) error {
			for _, typ := range []ggml.Type{ggml.TypeNVFP4, ggml.TypeQ1_0, ggml.TypeQ2_0} {
				if _, err := ggml.Quantize(typ, make([]float32, 256), 256, nil); err != nil {
					return err
				}
			}
			return nil
		}},
		{"Gallocr.AttemptedBufferSize", false, func(*testing.T) error {
			a, err := backend.NewGallocr(cpu.DefaultBufferType())
			if err != nil {
				return err
			}
			defer a.Close()
			_, err = a.AttemptedBufferSize(0)
			return err
		}},
		{"Scheduler.AttemptedBufferSize", false, func(*testing.T) error {
			s, err := sched.New([]*backend.Backend{cpu}, sched.Options{})
			if err != nil {
				return err
			}
			defer s.Close()
			_, err = s.AttemptedBufferSize(cpu)
			return err
		}},
		{"Scheduler.SetBatchSize", false, func(*testing.T) error {
			s, err := sched.New([]*backend.Backend{cpu}, sched.Options{})
			if err != nil {
				return err
			}
			defer s.Close()
			return s.SetBatchSize(32)
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.call(t)
			if c.system != haveSystem {
				require.ErrorIs(t, err, backend.ErrUnsupported)
				if c.system {
					assert.Contains(t, err.Error(), "-tags ggml_system")
				} else {
					assert.Contains(t, err.Error(), "embedded provider")
				}
				return
			}
			if err != nil {
				assert.False(t, errors.Is(err, backend.ErrUnsupported) && (strings.Contains(err.Error(), "ggml_system") || strings.Contains(err.Error(), "embedded provider")),
					"%s is refused on the provider that has it: %v", c.name, err)
			}
		})
	}

	// The documented table has exactly these rows.
	doc, err := os.ReadFile(filepath.Join(root, "docs/providers.md"))
	require.NoError(t, err)
	i := strings.Index(string(doc), "## What differs per provider")
	require.GreaterOrEqual(t, i, 0, "docs/providers.md has no table of differences")
	row := regexp.MustCompile("(?m)^\\| `([^`]+)`[^|]*\\| (system|embedded) \\|$")
	var documented, tested []string
	for _, m := range row.FindAllStringSubmatch(string(doc[i:]), -1) {
		documented = append(documented, m[1]+" "+m[2])
	}
	for _, c := range calls {
		p := "embedded"
		if c.system {
			p = "system"
		}
		tested = append(tested, c.name+" "+p)
	}
	sort.Strings(documented)
	sort.Strings(tested)
	assert.Equal(t, tested, documented, "docs/providers.md's table and TestProviderTable's calls differ")
}
