package ledger

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	hiero "github.com/hiero-ledger/hiero-sdk-go/v2/sdk"
)

// redacted is what key material prints as, everywhere.
const redacted = "[redacted]"

// Secret holds a private key. It never prints, formats or marshals its material:
// String, GoString, Format and MarshalJSON all give "[redacted]", so a Secret (or a
// struct holding one) is safe in logs, errors and %v output.
type Secret struct {
	key *hiero.PrivateKey
}

// ParseKey parses a private key given as DER hex, raw hex, or 0x-prefixed ECDSA hex.
// kind may be "" (try DER, then the generic form, then ED25519, then ECDSA),
// "ed25519" or "ecdsa" (needed for a raw 32-byte ECDSA key, which the generic form
// would read as ED25519). The error never contains the key.
func ParseKey(s, kind string) (sec Secret, err error) {
	defer func() {
		if r := recover(); r != nil {
			sec, err = Secret{}, errors.New("not a valid private key")
		}
	}()
	s = strings.TrimSpace(s)
	if s == "" {
		return Secret{}, errors.New("is empty")
	}
	var parsers []func(string) (hiero.PrivateKey, error)
	switch strings.ToLower(kind) {
	case "":
		parsers = []func(string) (hiero.PrivateKey, error){hiero.PrivateKeyFromStringDer, hiero.PrivateKeyFromString, hiero.PrivateKeyFromStringEd25519, hiero.PrivateKeyFromStringECDSA}
	case "ed25519":
		parsers = []func(string) (hiero.PrivateKey, error){hiero.PrivateKeyFromStringDer, hiero.PrivateKeyFromStringEd25519}
	case "ecdsa", "ecdsa_secp256k1", "secp256k1":
		parsers = []func(string) (hiero.PrivateKey, error){hiero.PrivateKeyFromStringDer, hiero.PrivateKeyFromStringECDSA}
	default:
		return Secret{}, fmt.Errorf("key type %q is not ed25519 or ecdsa", kind)
	}
	for _, p := range parsers {
		if k, err := p(s); err == nil {
			return Secret{key: &k}, nil
		}
	}
	return Secret{}, errors.New("is not a valid ED25519, ECDSA or DER-encoded private key")
}

// SecretFromKey wraps an SDK private key (tests, key generation).
func SecretFromKey(k hiero.PrivateKey) Secret { return Secret{key: &k} }

// IsSet reports whether the secret holds a key.
func (s Secret) IsSet() bool { return s.key != nil }

// PublicKey returns the public half; ok is false when no key is set.
func (s Secret) PublicKey() (hiero.PublicKey, bool) {
	if s.key == nil {
		return hiero.PublicKey{}, false
	}
	return s.key.PublicKey(), true
}

// String returns "[redacted]".
func (s Secret) String() string { return redacted }

// GoString returns "[redacted]".
func (s Secret) GoString() string { return redacted }

// Format writes "[redacted]" for every verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// MarshalJSON writes "[redacted]".
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText writes "[redacted]".
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// HCSConfig configures the HCS ledger. Its String method (and the Secret fields')
// never reveal key material.
type HCSConfig struct {
	// Network is "testnet", "mainnet", "previewnet" or a custom node list
	// "host:port=0.0.N[,host:port=0.0.M]" (plaintext unless the port is 50212 or 443).
	Network     string
	OperatorID  string // payer account, e.g. 0.0.1234
	OperatorKey Secret
	TopicID     string // may be empty only for CreateTopic
	SubmitKey   Secret // optional: signs every message when the topic has a submit key
	// MirrorURL is the mirror node REST base URL used to resolve a transaction whose
	// receipt has expired (receipts live about 3 minutes). Defaults per public
	// network; empty for a custom network, where a missing receipt is taken as
	// final (true of hcsfake, which keeps receipts).
	MirrorURL string

	// Tuning; zero values take the defaults.
	MaxNodes        int           // node account ids pinned per transaction (3)
	ValidDuration   time.Duration // transaction validity window (120s, at most 180s)
	StartSkew       time.Duration // valid start is this far before now, for clock skew (5s)
	MinBackoff      time.Duration // SDK retry backoff (250ms)
	MaxBackoff      time.Duration // (8s)
	GRPCDeadline    time.Duration // one gRPC call (10s)
	RequestTimeout  time.Duration // one SDK Execute, and one Send across its attempts (2m)
	ReceiptAttempts int           // receipt query attempts before "not found yet" (5)
	// NodeBackoff is how long the SDK shuns a node after a transport error (50ms):
	// HCS backs off BUSY and failing nodes itself, per node, growing from MinBackoff
	// to MaxBackoff while the other pinned nodes carry on.
	NodeBackoff time.Duration
	// SubmitTimeout is the longest wait for a node's answer to one submission before
	// it is taken for lost and settled by a receipt query (3s, at most GRPCDeadline).
	// Once answers have been seen the wait is ten times their moving average, at
	// least 100ms, so a lost reply costs a fraction of a second, not a deadline.
	SubmitTimeout time.Duration
}

// String describes the configuration without key material.
func (c HCSConfig) String() string {
	set := func(s Secret) string {
		if s.IsSet() {
			return redacted
		}
		return "none"
	}
	return fmt.Sprintf("HCSConfig{network=%s operator=%s key=%s topic=%s submitKey=%s mirror=%s}",
		c.Network, c.OperatorID, set(c.OperatorKey), c.TopicID, set(c.SubmitKey), c.MirrorURL)
}

// GoString is String, so that %#v cannot reveal the keys either.
func (c HCSConfig) GoString() string { return c.String() }

// Environment variables read by ConfigFromEnv.
const (
	EnvNetwork     = "HEDERA_NETWORK"
	EnvOperatorID  = "HEDERA_OPERATOR_ID"
	EnvOperatorKey = "HEDERA_OPERATOR_KEY"
	EnvKeyType     = "HEDERA_OPERATOR_KEY_TYPE" // optional: ed25519 | ecdsa, for raw hex keys
	EnvTopicID     = "HEDERA_TOPIC_ID"
	EnvSubmitKey   = "HEDERA_SUBMIT_KEY"
	EnvMirrorURL   = "HEDERA_MIRROR_URL"
)

var mirrorURLs = map[string]string{
	"mainnet":    "https://mainnet-public.mirrornode.hedera.com",
	"testnet":    "https://testnet.mirrornode.hedera.com",
	"previewnet": "https://previewnet.mirrornode.hedera.com",
}

// ConfigFromEnv reads the HCS configuration through getenv (os.Getenv in
// production): HEDERA_NETWORK, HEDERA_OPERATOR_ID, HEDERA_OPERATOR_KEY (ED25519, ECDSA
// or DER; HEDERA_OPERATOR_KEY_TYPE disambiguates a raw hex key), HEDERA_TOPIC_ID
// (empty is allowed here, for `hcs create-topic`; see RequireTopic), optional
// HEDERA_SUBMIT_KEY and HEDERA_MIRROR_URL. Every problem is reported, naming the
// variable; no error ever contains key material.
func ConfigFromEnv(getenv func(string) string) (HCSConfig, error) {
	var c HCSConfig
	var problems []string
	c.Network = strings.TrimSpace(getenv(EnvNetwork))
	if c.Network == "" {
		problems = append(problems, EnvNetwork+" is not set (testnet, mainnet, previewnet or host:port=0.0.N,…)")
	} else if _, err := parseNetwork(c.Network); err != nil {
		problems = append(problems, EnvNetwork+": "+err.Error())
	}
	c.OperatorID = strings.TrimSpace(getenv(EnvOperatorID))
	if c.OperatorID == "" {
		problems = append(problems, EnvOperatorID+" is not set")
	} else if _, err := hiero.AccountIDFromString(c.OperatorID); err != nil {
		problems = append(problems, fmt.Sprintf("%s %q is not an account id like 0.0.1234", EnvOperatorID, c.OperatorID))
	}
	kind := strings.TrimSpace(getenv(EnvKeyType))
	if k := getenv(EnvOperatorKey); strings.TrimSpace(k) == "" {
		problems = append(problems, EnvOperatorKey+" is not set")
	} else if s, err := ParseKey(k, kind); err != nil {
		problems = append(problems, EnvOperatorKey+" "+err.Error())
	} else {
		c.OperatorKey = s
	}
	c.TopicID = strings.TrimSpace(getenv(EnvTopicID))
	if c.TopicID != "" {
		if _, err := hiero.TopicIDFromString(c.TopicID); err != nil {
			problems = append(problems, fmt.Sprintf("%s %q is not a topic id like 0.0.5678", EnvTopicID, c.TopicID))
		}
	}
	if k := getenv(EnvSubmitKey); strings.TrimSpace(k) != "" {
		if s, err := ParseKey(k, ""); err != nil {
			problems = append(problems, EnvSubmitKey+" "+err.Error())
		} else {
			c.SubmitKey = s
		}
	}
	c.MirrorURL = strings.TrimRight(strings.TrimSpace(getenv(EnvMirrorURL)), "/")
	if c.MirrorURL == "" {
		c.MirrorURL = mirrorURLs[c.Network]
	}
	if len(problems) > 0 {
		return c, fmt.Errorf("hcs configuration: %s", strings.Join(problems, "; "))
	}
	return c, nil
}

// RequireTopic returns an error unless a topic is configured (posting needs one).
func (c HCSConfig) RequireTopic() error {
	if c.TopicID == "" {
		return fmt.Errorf("hcs configuration: %s is not set; create a topic with `countersign hcs create-topic`", EnvTopicID)
	}
	return nil
}

// parseNetwork returns nil for a named network, else the custom node map.
func parseNetwork(s string) (map[string]hiero.AccountID, error) {
	switch s {
	case "testnet", "mainnet", "previewnet":
		return nil, nil
	}
	nodes := map[string]hiero.AccountID{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		addr, acct, ok := strings.Cut(part, "=")
		if !ok || addr == "" || !strings.Contains(addr, ":") {
			return nil, fmt.Errorf("%q is not testnet, mainnet, previewnet or host:port=0.0.N", part)
		}
		id, err := hiero.AccountIDFromString(strings.TrimSpace(acct))
		if err != nil {
			return nil, fmt.Errorf("%q: node account %q is not like 0.0.3", part, acct)
		}
		nodes[strings.TrimSpace(addr)] = id
	}
	return nodes, nil
}

// pinNodes picks up to max node account ids from a client's network, lowest first,
// so that every transaction names its nodes explicitly instead of relying on the
// SDK's health filter.
func pinNodes(network map[string]hiero.AccountID, max int) []hiero.AccountID {
	seen := map[string]hiero.AccountID{}
	for _, id := range network {
		seen[id.String()] = id
	}
	ids := make([]hiero.AccountID, 0, len(seen))
	for _, id := range seen {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := ids[i], ids[j]
		if a.Shard != b.Shard {
			return a.Shard < b.Shard
		}
		if a.Realm != b.Realm {
			return a.Realm < b.Realm
		}
		return a.Account < b.Account
	})
	if max > 0 && len(ids) > max {
		ids = ids[:max]
	}
	return ids
}

// HashScanURL links a topic (consensusAt zero) or one message's transaction on
// HashScan; "" for a network HashScan does not show (custom nodes).
func HashScanURL(network, topicID string, consensusAt time.Time) string {
	switch network {
	case "mainnet", "testnet", "previewnet":
	default:
		return ""
	}
	if consensusAt.IsZero() {
		return fmt.Sprintf("https://hashscan.io/%s/topic/%s", network, topicID)
	}
	return fmt.Sprintf("https://hashscan.io/%s/transaction/%d.%09d", network, consensusAt.Unix(), consensusAt.Nanosecond())
}

// Info names the ledger the publisher posts to, for pages and the API: Kind "local"
// or "hcs", and for HCS the network and topic.
type Info struct {
	Kind    string // local | hcs
	Network string // testnet | mainnet | previewnet, or a custom node list (no HashScan)
	TopicID string
}

// TopicURL links the HCS topic on HashScan, where entries are found by sequence
// number; "" for the local ledger and for networks HashScan does not show.
func (i Info) TopicURL() string {
	if i.Kind != "hcs" {
		return ""
	}
	return HashScanURL(i.Network, i.TopicID, time.Time{})
}
