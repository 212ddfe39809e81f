package hub

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub/clustertest"
)

// pki writes a CA, a server certificate for 127.0.0.1 and a client
// certificate into dir, as PEM files.
type pki struct{ ca, serverCert, serverKey, clientCert, clientKey string }

func newPKI(t *testing.T, dir string) pki {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tb test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := pki{ca: filepath.Join(dir, "ca.pem")}
	writePEM(t, p.ca, "CERTIFICATE", caDER)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP) (cert, key string) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalECPrivateKey(k)
		cert, key = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		writePEM(t, cert, "CERTIFICATE", der)
		writePEM(t, key, "EC PRIVATE KEY", keyDER)
		return cert, key
	}
	p.serverCert, p.serverKey = issue("server", 2, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	p.clientCert, p.clientKey = issue("client", 3, x509.ExtKeyUsageClientAuth, nil)
	return p
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// With mutual TLS on the servers, a hub given the CA and a client
// certificate publishes and collects; one without a certificate is refused
// at connect with an error that says so.
func TestClusterOverMutualTLS(t *testing.T) {
	p := newPKI(t, t.TempDir())
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, Config: fmt.Sprintf(
		"tls {\n  cert_file: %q\n  key_file: %q\n  ca_file: %q\n  verify: true\n}\n", p.serverCert, p.serverKey, p.ca)})
	url := strings.ReplaceAll(c.URL(), "nats://", "tls://")
	n, err := Open(context.Background(), Options{Dir: DataDir(t.TempDir() + "/data"), Logger: quiet,
		Cluster: &Cluster{URL: url, CA: p.ca, Cert: p.clientCert, Key: p.clientKey, User: "tls", Machine: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	e := events.Event{ID: events.NewID(), Time: time.Now().UTC(), Kind: events.KindToolCompleted,
		Boundary: events.BoundaryTool, RequestID: events.NewID(), Outcome: events.OK}
	if _, err := n.Append(context.Background(), []events.Event{e}); err != nil {
		t.Fatalf("append over mutual TLS: %v", err)
	}
	st := n.cur.(*local).st
	eventually(t, "the collector holds the event", func() bool {
		missing, _ := st.Missing([]events.ID{e.ID})
		return len(missing) == 0
	})

	_, err = Open(context.Background(), Options{Dir: DataDir(t.TempDir() + "/data"), Logger: quiet, Timeout: 5 * time.Second,
		Cluster: &Cluster{URL: url, CA: p.ca, User: "tls", Machine: "m2"}})
	if err == nil || !strings.Contains(err.Error(), "cluster: connect to") {
		t.Fatalf("a hub without a client certificate: %v; want a connect error", err)
	}
	t.Logf("without a client certificate: %v", err)
}
