package egress

import (
	"bufio"
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
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCA is a throwaway CA and a leaf for the fake names the tests use.
type testCA struct {
	pool   *x509.CertPool
	caFile string // PEM, for curl --cacert and GIT_SSL_CAINFO
	leaf   tls.Certificate
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "egress test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "registry.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames:    []string{"registry.test", "*.mirror.test", "rebind.test", "git.test"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{pool: x509.NewCertPool(), caFile: filepath.Join(t.TempDir(), "ca.pem")}
	ca.pool.AddCert(caCert)
	if err := os.WriteFile(ca.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	ca.leaf = tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: leafKey}
	return ca
}

// startTLS serves h over TLS on 127.0.0.1 with the CA's leaf.
func (ca *testCA) startTLS(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{ca.leaf}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// fakeResolver answers from a fixed table and counts lookups; names not in
// it fail, so no test depends on real DNS.
type fakeResolver struct {
	mu    sync.Mutex
	table map[string][]netip.Addr
	calls map[string]int
}

func newResolver(pairs ...string) *fakeResolver {
	r := &fakeResolver{table: map[string][]netip.Addr{}, calls: map[string]int{}}
	for i := 0; i+1 < len(pairs); i += 2 {
		r.table[pairs[i]] = append(r.table[pairs[i]], netip.MustParseAddr(pairs[i+1]))
	}
	return r
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[host]++
	a, ok := r.table[host]
	if !ok {
		return nil, fmt.Errorf("fake resolver: no such host %s", host)
	}
	return append([]netip.Addr(nil), a...), nil
}

// routeDialer sends a dial for a fake public IP:port to a real local
// address, records every address it was asked for, and dials anything
// else for real.
type routeDialer struct {
	mu     sync.Mutex
	routes map[string]string
	dialed []string
}

func newDialer(pairs ...string) *routeDialer {
	d := &routeDialer{routes: map[string]string{}}
	for i := 0; i+1 < len(pairs); i += 2 {
		d.routes[pairs[i]] = pairs[i+1]
	}
	return d
}

func (d *routeDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, addr)
	real, ok := d.routes[addr]
	d.mu.Unlock()
	if !ok {
		real = addr
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, real)
}

func (d *routeDialer) Dialed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialed...)
}

// entries collects sink deliveries so tests can wait for them.
type entries struct{ ch chan Entry }

func newEntries() *entries      { return &entries{ch: make(chan Entry, 100)} }
func (s *entries) sink(e Entry) { s.ch <- e }
func (s *entries) next(t *testing.T) Entry {
	t.Helper()
	select {
	case e := <-s.ch:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no log entry delivered within 10s")
		return Entry{}
	}
}

// startProxy starts a proxy on a fresh loopback listener and returns it
// with its address; Stop runs at cleanup.
func startProxy(t *testing.T, cfg Config) (*Proxy, string) {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background(), ln); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return p, ln.Addr().String()
}

// rawConnect sends a CONNECT for authority over a new connection, with
// early bytes in the same write, and returns the response and the conn.
func rawConnect(t *testing.T, proxy, authority string, early []byte) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	head := "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"
	if _, err := c.Write(append([]byte(head), early...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("reading CONNECT response: %v", err)
	}
	return resp, c, br
}

// cleanEnv is the process environment without any proxy settings, so a
// client uses exactly the proxy a test sets.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k := strings.ToLower(strings.SplitN(kv, "=", 2)[0])
		if strings.HasSuffix(k, "_proxy") || strings.HasPrefix(k, "git_") || k == "home" || k == "curl_home" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}
