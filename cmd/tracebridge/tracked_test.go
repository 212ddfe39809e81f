package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNothingBuiltIsTracked walks the files git tracks (go-sdk's
// copyright_test.go style) and fails on anything a build makes: an
// executable (ELF, Mach-O, PE) or a file over 1 MiB outside the vendored
// web assets. A 51.5 MB binary was committed once at the repository root.
func TestNothingBuiltIsTracked(t *testing.T) {
	root := filepath.Join("..", "..")
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	magics := map[string][]byte{
		"ELF":             {0x7f, 'E', 'L', 'F'},
		"Mach-O":          {0xcf, 0xfa, 0xed, 0xfe},
		"Mach-O (32-bit)": {0xce, 0xfa, 0xed, 0xfe},
		"Mach-O (fat)":    {0xca, 0xfe, 0xba, 0xbe},
		"PE":              {'M', 'Z'},
	}
	n := 0
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		path := filepath.Join(root, name)
		fi, err := os.Lstat(path)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink
		}
		n++
		if fi.Size() > 1<<20 && !strings.HasPrefix(name, "web/assets/vendor/") {
			t.Errorf("%s: %d bytes tracked; build outputs and large blobs do not belong in git (git rm --cached, then .gitignore it)", name, fi.Size())
		}
		head := make([]byte, 4)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		k, _ := f.Read(head)
		f.Close()
		for kind, magic := range magics {
			if k >= len(magic) && bytes.Equal(head[:len(magic)], magic) {
				t.Errorf("%s: a tracked %s executable; binaries are built, never committed", name, kind)
			}
		}
	}
	if n < 100 {
		t.Fatalf("walked %d tracked files; git ls-files did not list the tree", n)
	}
}
