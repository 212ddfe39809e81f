package events

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestKeyFileEmptyLeftoverIsReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "redact.key")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, nil, 0o600) // what an old version left on a full disk
	key, err := LoadKeyFile(path, 32)
	if err != nil || len(key) != 32 {
		t.Fatalf("an empty key file: %v (%d bytes)", err, len(key))
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, key) {
		t.Fatal("the new key is not the one on disk")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
}

func TestKeyFileDamagedIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "redact.key")
	os.WriteFile(path, []byte("12345"), 0o600)
	_, err := LoadKeyFile(path, 32)
	if err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("a 5-byte key: %v", err)
	}
}

func TestKeyFileRaceGivesOneKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "k")
	var wg sync.WaitGroup
	keys := make([][]byte, 16)
	for i := range keys {
		wg.Go(func() {
			k, err := LoadKeyFile(path, 32)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if !bytes.Equal(k, keys[0]) {
			t.Fatal("racing creators got different keys")
		}
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".k.*")); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
}

// TestKeyFileOnAFullDisk creates a key on a full tmpfs (in a mount
// namespace of its own): creation fails and leaves no file, and once there
// is space again the key is made.
func TestKeyFileOnAFullDisk(t *testing.T) {
	if os.Getenv("TB_KEYFILE_FULL") != "" {
		fullDiskHelper()
		return
	}
	dir := t.TempDir()
	script := `mount -t tmpfs -o size=4k none "$1" && dd if=/dev/zero of="$1/fill" bs=1k count=64 2>/dev/null; exec "$2" -test.run '^TestKeyFileOnAFullDisk$' -test.count=1`
	cmd := exec.Command("unshare", "--mount", "sh", "-c", script, "sh", dir, os.Args[0])
	cmd.Env = append(os.Environ(), "TB_KEYFILE_FULL="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the full-disk run (unshare --mount, tmpfs): %v\n%s", err, out)
	}
	for _, want := range []string{"full: error", "full: no file", "freed: 32 bytes"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
}

func fullDiskHelper() {
	dir := os.Getenv("TB_KEYFILE_FULL")
	path := filepath.Join(dir, "keys", "redact.key")
	_, err := LoadKeyFile(path, 32)
	if err != nil {
		os.Stdout.WriteString("full: error: " + err.Error() + "\n")
	}
	if _, serr := os.Stat(path); os.IsNotExist(serr) {
		os.Stdout.WriteString("full: no file\n")
	}
	os.Remove(filepath.Join(dir, "fill"))
	if k, err := LoadKeyFile(path, 32); err == nil {
		b, _ := os.ReadFile(path)
		if bytes.Equal(b, k) {
			os.Stdout.WriteString("freed: 32 bytes\n")
		}
	} else {
		os.Stdout.WriteString("freed: " + err.Error() + "\n")
	}
}
