package ledger

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	hiero "github.com/hiero-ledger/hiero-sdk-go/v2/sdk"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnvKeyForms(t *testing.T) {
	ed, _ := hiero.PrivateKeyGenerateEd25519()
	ec, _ := hiero.PrivateKeyGenerateEcdsa()
	cases := map[string]struct{ key, kind string }{
		"ed25519 der": {ed.StringDer(), ""},
		"ed25519 raw": {ed.StringRaw(), ""},
		"ecdsa der":   {ec.StringDer(), ""},
		"ecdsa raw":   {ec.StringRaw(), "ecdsa"},
		"ecdsa 0x":    {"0x" + ec.StringRaw(), "ecdsa"},
	}
	for name, c := range cases {
		cfg, err := ConfigFromEnv(env(map[string]string{
			EnvNetwork: "testnet", EnvOperatorID: "0.0.1234", EnvOperatorKey: c.key, EnvKeyType: c.kind,
			EnvTopicID: "0.0.5678", EnvSubmitKey: ed.StringDer(),
		}))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !cfg.OperatorKey.IsSet() || !cfg.SubmitKey.IsSet() || cfg.MirrorURL == "" || cfg.RequireTopic() != nil {
			t.Fatalf("%s: %v", name, cfg)
		}
		assertNoKey(t, c.key, cfg)
	}
}

// assertNoKey formats v every way a log line or error might and fails if the key or
// its raw form shows up.
func assertNoKey(t *testing.T, key string, v any) {
	t.Helper()
	raw := strings.TrimPrefix(key, "0x")
	raw = raw[len(raw)-32:] // any long tail of the key material
	var sb strings.Builder
	fmt.Fprintf(&sb, "%v %+v %#v %s %q", v, v, v, v, v)
	b, _ := json.Marshal(v)
	sb.Write(b)
	slog.New(slog.NewTextHandler(&sb, nil)).Info("cfg", "cfg", v)
	slog.New(slog.NewJSONHandler(&sb, nil)).Info("cfg", "cfg", v)
	if strings.Contains(strings.ToLower(sb.String()), strings.ToLower(raw)) {
		t.Fatalf("key material printed: %s", sb.String())
	}
	if !strings.Contains(sb.String(), redacted) {
		t.Fatalf("no redaction marker: %s", sb.String())
	}
}

func TestSecretNeverPrints(t *testing.T) {
	k, _ := hiero.PrivateKeyGenerateEd25519()
	s := SecretFromKey(k)
	assertNoKey(t, k.StringRaw(), s)
	assertNoKey(t, k.StringRaw(), struct{ K Secret }{s})
	assertNoKey(t, k.StringRaw(), &HCSConfig{OperatorKey: s})
}

func TestConfigFromEnvErrors(t *testing.T) {
	secret := "302e020100300506032b6570042204201111111111111111111111111111111111111111111111111111111111ZZZZ"
	_, err := ConfigFromEnv(env(map[string]string{
		EnvNetwork: "moonnet", EnvOperatorID: "bob", EnvOperatorKey: secret, EnvTopicID: "t", EnvSubmitKey: secret + "00",
	}))
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{EnvNetwork, EnvOperatorID, EnvOperatorKey, EnvTopicID, EnvSubmitKey} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not name %s: %s", want, msg)
		}
	}
	if strings.Contains(msg, "1111111111") || strings.Contains(msg, "ZZZZ") {
		t.Fatalf("error contains the key: %s", msg)
	}
	_, err = ConfigFromEnv(env(nil))
	if err == nil || !strings.Contains(err.Error(), "is not set") {
		t.Fatalf("%v", err)
	}
	if _, err := ParseKey("abc", "rsa"); err == nil {
		t.Fatal("rsa accepted")
	}
	cfg, err := ConfigFromEnv(env(map[string]string{EnvNetwork: "127.0.0.1:50211=0.0.3,127.0.0.1:50212=0.0.4", EnvOperatorID: "0.0.2",
		EnvOperatorKey: func() string { k, _ := hiero.PrivateKeyGenerateEd25519(); return k.StringDer() }()}))
	if err != nil || cfg.MirrorURL != "" || cfg.RequireTopic() == nil {
		t.Fatalf("custom network: %v %v", cfg, err)
	}
}

func TestParseNetworkAndPin(t *testing.T) {
	nodes, err := parseNetwork("a:1=0.0.5, b:2=0.0.3,c:3=0.0.4")
	if err != nil || len(nodes) != 3 {
		t.Fatal(nodes, err)
	}
	pinned := pinNodes(nodes, 2)
	if len(pinned) != 2 || pinned[0].Account != 3 || pinned[1].Account != 4 {
		t.Fatal(pinned)
	}
	for _, bad := range []string{"a:1", "a=0.0.3", "a:1=x"} {
		if _, err := parseNetwork(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestHashScanURL(t *testing.T) {
	at := time.Unix(1700000000, 5).UTC()
	if got := HashScanURL("testnet", "0.0.5", at); got != "https://hashscan.io/testnet/transaction/1700000000.000000005" {
		t.Fatal(got)
	}
	if got := HashScanURL("mainnet", "0.0.5", time.Time{}); got != "https://hashscan.io/mainnet/topic/0.0.5" {
		t.Fatal(got)
	}
	if HashScanURL("127.0.0.1:1=0.0.3", "0.0.5", at) != "" {
		t.Fatal("custom network linked")
	}
}

func TestNewHCSRejects(t *testing.T) {
	if _, err := NewHCS(HCSConfig{Network: "testnet", OperatorID: "0.0.2"}); err == nil {
		t.Fatal("no key accepted")
	}
	k, _ := hiero.PrivateKeyGenerateEd25519()
	if _, err := NewHCS(HCSConfig{Network: "x:1=0.0.3", OperatorID: "nope", OperatorKey: SecretFromKey(k)}); err == nil {
		t.Fatal("bad operator accepted")
	}
	if _, err := NewHCS(HCSConfig{Network: "x:1=0.0.3", OperatorID: "0.0.2", OperatorKey: SecretFromKey(k), ValidDuration: time.Hour}); err == nil {
		t.Fatal("validity over 180s accepted")
	}
}
