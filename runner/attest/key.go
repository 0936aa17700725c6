package attest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/secure-systems-lab/go-securesystemslib/signerverifier"
)

// KeyFile is the signing key's file name in the data dir: a PKCS#8 PEM ECDSA P-256
// private key, mode 0600, made on first start.
const KeyFile = "attestation-key.pem"

// Signer signs attestations with the runner's key. It is safe for concurrent use.
type Signer struct {
	sv     *signerverifier.ECDSASignerVerifier
	public []byte // PEM
}

// LoadOrCreateKey returns the signer of the key in dir/KeyFile, making the key (and
// dir) first when there is none. A key file anyone but its owner may read is refused:
// whoever reads it can sign what Countersign never verified.
func LoadOrCreateKey(dir string) (*Signer, error) {
	path := filepath.Join(dir, KeyFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if b, err = createKey(dir, path); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("attest: read the signing key: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("attest: signing key %s is readable by others (mode %v); chmod 600 it", path, fi.Mode().Perm())
	}
	return NewSigner(b)
}

// createKey writes a new P-256 key to path (0600), never over an existing file.
func createKey(dir, path string) ([]byte, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("attest: generate the signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return os.ReadFile(path) // another process made it first: use theirs
	}
	if err != nil {
		return nil, fmt.Errorf("attest: write the signing key: %w", err)
	}
	_, err = f.Write(b)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return nil, fmt.Errorf("attest: write the signing key: %w", err)
	}
	return b, nil
}

// NewSigner returns the signer of a PEM ECDSA P-256 private key.
func NewSigner(privatePEM []byte) (*Signer, error) {
	k, err := signerverifier.LoadKey(privatePEM)
	if err != nil {
		return nil, fmt.Errorf("attest: signing key: %w", err)
	}
	if k.KeyType != signerverifier.ECDSAKeyType || k.KeyVal.Private == "" {
		return nil, fmt.Errorf("attest: signing key must be an ECDSA private key, not %s", k.KeyType)
	}
	sv, err := signerverifier.NewECDSASignerVerifierFromSSLibKey(k)
	if err != nil {
		return nil, fmt.Errorf("attest: signing key: %w", err)
	}
	if p, ok := sv.Public().(*ecdsa.PublicKey); !ok || p.Curve != elliptic.P256() {
		return nil, errors.New("attest: signing key must be on P-256")
	}
	return &Signer{sv: sv, public: []byte(k.KeyVal.Public + "\n")}, nil
}

// PublicKeyPEM returns the public key as PEM (PKIX "PUBLIC KEY"), the form
// `cosign verify-blob-attestation --key` reads.
func (s *Signer) PublicKeyPEM() []byte { return append([]byte(nil), s.public...) }

// Sign wraps statement in a DSSE envelope signed with the key, and returns the
// envelope's JSON.
func (s *Signer) Sign(ctx context.Context, statement []byte) ([]byte, error) {
	es, err := dsse.NewEnvelopeSigner(s.sv)
	if err != nil {
		return nil, err
	}
	env, err := es.SignPayload(ctx, PayloadType, statement)
	if err != nil {
		return nil, fmt.Errorf("attest: sign: %w", err)
	}
	return json.Marshal(env)
}
