package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Archives for this machine's platform and for Windows: each holds the
// binary and the README, SHA256SUMS matches every archive, and the binary
// prints the stamped version.
func TestDistBuildsStampedArchivesWithChecksums(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tracebridge twice (make test runs it)")
	}
	out := t.TempDir()
	t.Chdir(filepath.Join("..", ".."))
	host := runtime.GOOS + "/" + runtime.GOARCH
	var progress strings.Builder
	if err := Dist("v0.0.0-test", out, []string{host, "windows/amd64"}, &progress); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "[2/2] tracebridge_v0.0.0-test_windows_amd64") {
		t.Errorf("progress: %q", progress.String())
	}
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
	if len(lines) != 2 {
		t.Fatalf("SHA256SUMS:\n%s", sums)
	}
	for _, l := range lines {
		sum, name, _ := strings.Cut(l, "  ")
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: SHA256SUMS says %s", name, sum)
		}
	}

	// This platform's archive: its binary runs and knows its version.
	name := "tracebridge_v0.0.0-test_" + runtime.GOOS + "_" + runtime.GOARCH
	f, err := os.Open(filepath.Join(out, name+".tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	bin := filepath.Join(t.TempDir(), "tracebridge")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == name+"/tracebridge" {
			b, _ := io.ReadAll(tr)
			if err := os.WriteFile(bin, b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if strings.Join(names, " ") != name+"/tracebridge "+name+"/README.md" {
		t.Fatalf("the archive holds %q", names)
	}
	v, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.Contains(string(v), "v0.0.0-test") {
		t.Fatalf("tracebridge --version: %q %v", v, err)
	}

	zr, err := zip.OpenReader(filepath.Join(out, "tracebridge_v0.0.0-test_windows_amd64.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 2 || zr.File[0].Name != "tracebridge_v0.0.0-test_windows_amd64/tracebridge.exe" {
		t.Fatalf("the Windows archive holds %v", zr.File)
	}
	r, _ := zr.File[0].Open()
	head := make([]byte, 2)
	io.ReadFull(r, head)
	r.Close()
	if string(head) != "MZ" {
		t.Fatalf("the Windows binary starts %q, not a PE header", head)
	}
}
