package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGeneratedUpToDate checks that the checked-in generated files are what
// go generate ./internal/provider writes now: a new cgo package, or a new
// //goggml:cgo line in a provider file, needs a go generate.
func TestGeneratedUpToDate(t *testing.T) {
	t.Chdir("..")
	files, err := generate()
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for path, want := range files {
		got, err := os.ReadFile(path)
		require.NoError(t, err, "%s is missing: run go generate ./internal/provider", path)
		require.Equal(t, string(want), string(got), "%s is stale: run go generate ./internal/provider", path)
	}
	// No stale provider_gen.go in a package that no longer includes goggml.h.
	root, err := moduleRoot()
	require.NoError(t, err)
	here, err := filepath.Abs(".")
	require.NoError(t, err)
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != generated {
			return err
		}
		rel, err := filepath.Rel(here, path)
		require.NoError(t, err)
		_, ok := files[rel]
		require.True(t, ok, "%s is not generated any more: delete it", path)
		return nil
	})
	require.NoError(t, err)
}
