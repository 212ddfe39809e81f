// Command dist builds tracebridge's release archives: one per platform
// (linux, darwin and windows on amd64 and arm64), each holding the binary
// with its version stamped and the README, and a SHA256SUMS file over them.
//
//	go run ./cmd/dist [-version V] [-out DIR] [-targets linux/amd64,…]
//
// `make dist` runs it. The version defaults to `git describe --tags
// --always --dirty` (else "dev"); `tracebridge --version` prints it.
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Targets are the platforms a release is built for.
var Targets = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}

func main() {
	version := flag.String("version", "", "the `VERSION` stamped in the binaries (default: git describe --tags --always --dirty, else dev)")
	out := flag.String("out", filepath.Join("out", "dist"), "the `DIR` the archives and SHA256SUMS are written to (emptied first)")
	targets := flag.String("targets", strings.Join(Targets, ","), "the `OS/ARCH,…` platforms to build")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./cmd/dist [flags]\n\nBuilds tracebridge's release archives and their SHA256SUMS.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	v := *version
	if v == "" {
		v = describe()
	}
	if err := Dist(v, *out, strings.Split(*targets, ","), os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

// describe is the checkout's `git describe`, else "dev".
func describe() string {
	b, err := exec.Command("git", "describe", "--tags", "--always", "--dirty").Output()
	if v := strings.TrimSpace(string(b)); err == nil && v != "" {
		return v
	}
	return "dev"
}

// Dist builds an archive per target into out and writes out/SHA256SUMS,
// saying what it builds on progress.
func Dist(version, out string, targets []string, progress io.Writer) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("no go command on PATH: %w", err)
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		return fmt.Errorf("run it from the repository's root: %w", err)
	}
	var sums strings.Builder
	for i, target := range targets {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(target), "/")
		if !ok {
			return fmt.Errorf("target %q is not OS/ARCH", target)
		}
		name := fmt.Sprintf("tracebridge_%s_%s_%s", version, goos, goarch)
		fmt.Fprintf(progress, "[%d/%d] %s\n", i+1, len(targets), name)
		bin, err := build(goBin, version, goos, goarch)
		if err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
		exe := "tracebridge"
		if goos == "windows" {
			exe += ".exe"
		}
		files := []file{{name + "/" + exe, bin, 0o755}, {name + "/README.md", readme, 0o644}}
		archive := filepath.Join(out, name+".tar.gz")
		if goos == "windows" {
			archive = filepath.Join(out, name+".zip")
			err = writeZip(archive, files)
		} else {
			err = writeTarGz(archive, files)
		}
		if err != nil {
			return err
		}
		b, err := os.ReadFile(archive)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), filepath.Base(archive))
	}
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(sums.String()), 0o644)
}

// build compiles ./cmd/tracebridge for goos/goarch with version stamped,
// statically (no cgo) and without the builder's paths.
func build(goBin, version, goos, goarch string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "tb-dist-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "tracebridge")
	cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags", "-s -w -X main.Version="+version, "-o", bin, "./cmd/tracebridge")
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	return os.ReadFile(bin)
}

type file struct {
	name string
	body []byte
	mode int64
}

// modTime is every archived file's time: archives of the same build are
// the same bytes.
var modTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func writeTarGz(path string, files []file) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, x := range files {
		if err := tw.WriteHeader(&tar.Header{Name: x.name, Mode: x.mode, Size: int64(len(x.body)), ModTime: modTime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(x.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}

func writeZip(path string, files []file) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, x := range files {
		h := &zip.FileHeader{Name: x.name, Method: zip.Deflate, Modified: modTime}
		h.SetMode(os.FileMode(x.mode))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(x.body); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}
