package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
)

// tbRun runs the tracebridge CLI on data and returns its output.
func tbRun(t *testing.T, data string, args ...string) string {
	t.Helper()
	out, err := exec.Command(tbBin, append([]string{"--data", data}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tracebridge %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

var acceptHashRE = regexp.MustCompile(`tools accept (\S+) --hash ([0-9a-f]{12})`)

// The same server name pointing at another process: its identity (the
// command, the executable's hash) is not the pinned one, so the call is
// refused ServerChanged and the new command never runs; tools diff shows
// old and new identity; accepting moves the pin and the call runs.
func TestServerIdentityIsPinned(t *testing.T) {
	long(t)
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	data := filepath.Join(dir, "data")
	server := func(extra string) string {
		return hostileConfig(t, "", map[string]string{"s": fmt.Sprintf("env = { TB_FAULT_UPSTREAM = \"1\", TB_FAULT_MARK = %q }%s", marks, extra)})
	}
	ran := func() int {
		b, _ := os.ReadFile(marks)
		return strings.Count(string(b), "ok\n")
	}
	b := startBridge(t, tbBin, data, "2025-11-25", server(""))
	if _, _, code := b.call(t, "s__ok", map[string]any{}); code != "" {
		t.Fatalf("first sight: %s", code)
	}
	b.close(t)
	if out := tbRun(t, data, "tools", "list"); !strings.Contains(out, "server:s") {
		t.Fatalf("the identity is not pinned beside the tools:\n%s", out)
	}

	// Another command under the same name.
	b = startBridge(t, tbBin, data, "2025-11-25", server("\nargs = [\"--another\"]"))
	before := ran()
	res, _, code := b.call(t, "s__ok", map[string]any{})
	if code != events.CodeServerChanged || !strings.Contains(textOf(res), "tools accept server:s") {
		t.Fatalf("another command under the pinned name: %s %s", code, textOf(res))
	}
	if ran() != before {
		t.Fatal("a call reached the changed server")
	}
	diff := tbRun(t, data, "tools", "diff", "server:s")
	if !strings.Contains(diff, "--another") || !strings.Contains(diff, "-") {
		t.Fatalf("tools diff does not show old vs new identity:\n%s", diff)
	}
	m := acceptHashRE.FindStringSubmatch(diff)
	if m == nil {
		t.Fatalf("tools diff names no hash to accept:\n%s", diff)
	}
	tbRun(t, data, "tools", "accept", "server:s", "--hash", m[2], "--reason", "moved to the new build")
	if _, _, code := b.call(t, "s__ok", map[string]any{}); code != "" {
		t.Fatalf("after accepting: %s", code)
	}
	if ran() != before+1 {
		t.Fatal("the accepted server did not run the call")
	}
	b.close(t)
	if n := countCode(t, data, events.KindUpstreamToolChanged, events.CodeServerChanged); n != 1 {
		t.Fatalf("%d ServerChanged records, want 1", n)
	}
}

// testPKI is a CA and leaves signed by it for 127.0.0.1.
type testPKI struct {
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	pem   []byte
}

func newTestPKI(t *testing.T) testPKI {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tracebridge test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return testPKI{ca: ca, caKey: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// leaf is a certificate for 127.0.0.1 with a fresh key.
func (p testPKI) leaf(t *testing.T, serial int64) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// tlsUpstream serves a go-sdk server with tool "ok" over https on addr
// ("": any port) with cert, counting the HTTP requests it is sent.
func tlsUpstream(t *testing.T, addr string, cert tls.Certificate, requests *atomic.Int64) (string, func()) {
	s := sdk.NewServer(&sdk.Implementation{Name: "tls-upstream", Version: "1"}, nil)
	type args struct{}
	sdk.AddTool(s, &sdk.Tool{Name: "ok", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(context.Context, *sdk.CallToolRequest, args) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var l net.Listener
	var err error
	for range 50 { // the same port again, once the last server let it go
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(w, r)
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ErrorLog: nil}
	go srv.ServeTLS(l, "", "")
	return l.Addr().String(), func() { srv.Close() }
}

// An https upstream whose certificate key changes (same URL, a valid
// certificate from the same CA): refused in the TLS handshake, before a
// request or a header is sent, ServerChanged until accepted.
func TestServerTLSKeyIsPinned(t *testing.T) {
	long(t)
	dir := t.TempDir()
	pki := newTestPKI(t)
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, pki.pem, 0o600)
	var requests atomic.Int64
	addr, stop := tlsUpstream(t, "", pki.leaf(t, 2), &requests)
	cfg := writeConfig(t, fmt.Sprintf("[servers.tls]\nurl = \"https://%s/mcp\"\n", addr))
	data := filepath.Join(dir, "data")
	b := startBridge(t, tbBin, data, "2025-11-25", cfg, "SSL_CERT_FILE="+caFile)
	if _, _, code := b.call(t, "tls__ok", map[string]any{}); code != "" {
		t.Fatalf("first sight: %s", code)
	}
	b.close(t)
	stop()

	_, stop = tlsUpstream(t, addr, pki.leaf(t, 3), &requests)
	defer stop()
	before := requests.Load()
	b = startBridge(t, tbBin, data, "2025-11-25", cfg, "SSL_CERT_FILE="+caFile)
	defer b.close(t)
	res, _, code := b.call(t, "tls__ok", map[string]any{})
	if code != events.CodeServerChanged {
		t.Fatalf("a new TLS key: %s %s", code, textOf(res))
	}
	if n := requests.Load() - before; n != 0 {
		t.Fatalf("%d requests reached the server with the new key", n)
	}
	if diff := tbRun(t, data, "tools", "diff", "server:tls"); !strings.Contains(diff, "tlsPublicKeySha256") {
		t.Fatalf("tools diff does not show the key change:\n%s", diff)
	}
}

// B4: tools list reads a descriptor over 4 KiB whole (the log keeps it
// cut) and says what its annotations say, not "?"; its "N of M" counts the
// rows of its own table (the server's identity is no tool).
func TestToolsListReadsLongDescriptors(t *testing.T) {
	long(t)
	dir := t.TempDir()
	desc := filepath.Join(dir, "desc")
	os.WriteFile(desc, []byte("answers ok. "+strings.Repeat("It answers with the text it was given, and nothing else. ", 90)), 0o600)
	data := filepath.Join(dir, "data")
	b := startBridge(t, tbBin, data, "2025-11-25", hostileConfig(t, "", map[string]string{"s": fmt.Sprintf("env = { TB_FAULT_UPSTREAM = \"1\", TB_FAULT_DESC = %q }", desc)}))
	toolNames(t, b.session)
	b.close(t)
	out := tbRun(t, data, "tools", "list")
	var rows, unmarked int
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], "s__") {
			continue
		}
		rows++
		if !strings.Contains(line, "read-only") {
			unmarked++
		}
		if f[0] == "s__ok" && !strings.Contains(line, "read-only") {
			t.Errorf("the long-described tool's row does not say read-only: %q", line)
		}
		if strings.HasSuffix(strings.TrimSpace(line), "?") {
			t.Errorf("a row says ?: %q", line)
		}
	}
	if want := fmt.Sprintf("%d of %d tools do not say they are read-only", unmarked, rows); !strings.Contains(out, want) {
		t.Errorf("tools list's count disagrees with its table (want %q):\n%s", want, out)
	}
}
