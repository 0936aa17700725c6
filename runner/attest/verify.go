package attest

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/secure-systems-lab/go-securesystemslib/signerverifier"
	"google.golang.org/protobuf/encoding/protojson"
)

// Verified is an attestation whose signature checked out: its Statement's bytes and
// digest, its subjects and its predicate.
type Verified struct {
	Statement []byte
	Digest    string
	Subjects  []Subject
	Predicate Predicate
}

// ErrSignature says the envelope is not signed by the key (or was changed after).
var ErrSignature = errors.New("attest: the signature does not verify with this key")

// Verify checks that envelope (a DSSE envelope's JSON) is signed by publicPEM's key
// over an in-toto Statement v1 of PredicateType, and returns what it says. It checks
// the signature only: the subject against a repository and the digest against the
// ledger are the caller's (see cmd/countersign's attest verify).
func Verify(ctx context.Context, envelope, publicPEM []byte) (*Verified, error) {
	var env dsse.Envelope
	if err := json.Unmarshal(envelope, &env); err != nil {
		return nil, fmt.Errorf("attest: not a DSSE envelope: %w", err)
	}
	if env.PayloadType != PayloadType {
		return nil, fmt.Errorf("attest: payload type %q is not %q", env.PayloadType, PayloadType)
	}
	k, err := signerverifier.LoadKey(publicPEM)
	if err != nil {
		return nil, fmt.Errorf("attest: public key: %w", err)
	}
	sv, err := signerverifier.NewECDSASignerVerifierFromSSLibKey(k)
	if err != nil {
		return nil, fmt.Errorf("attest: public key: %w", err)
	}
	if _, ok := sv.Public().(*ecdsa.PublicKey); !ok {
		return nil, errors.New("attest: public key is not ECDSA")
	}
	ev, err := dsse.NewEnvelopeVerifier(sv)
	if err != nil {
		return nil, err
	}
	_, body, err := ev.VerifyAndDecode(ctx, &env)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSignature, err)
	}
	return parse(body)
}

// parse reads a signed Statement.
func parse(body []byte) (*Verified, error) {
	var st intoto.Statement
	if err := protojson.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("attest: payload is not an in-toto Statement: %w", err)
	}
	if st.GetType() != intoto.StatementTypeUri {
		return nil, fmt.Errorf("attest: statement type %q is not %q", st.GetType(), intoto.StatementTypeUri)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("attest: statement: %w", err)
	}
	if st.GetPredicateType() != PredicateType {
		return nil, fmt.Errorf("attest: predicate type %q is not %q", st.GetPredicateType(), PredicateType)
	}
	raw, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return nil, err
	}
	v := &Verified{Statement: body, Digest: StatementDigest(body)}
	if err := json.Unmarshal(raw, &v.Predicate); err != nil {
		return nil, fmt.Errorf("attest: predicate: %w", err)
	}
	for _, s := range st.GetSubject() {
		v.Subjects = append(v.Subjects, Subject{Name: s.GetName(), Digest: s.GetDigest()})
	}
	return v, nil
}

// Commit returns the git commit the attestation is about, "" when its subject is not
// a commit.
func (v *Verified) Commit() string {
	for _, s := range v.Subjects {
		if c := s.Digest["gitCommit"]; c != "" {
			return c
		}
	}
	return ""
}

// Tree returns the git tree the attestation names, "" when none.
func (v *Verified) Tree() string {
	for _, s := range v.Subjects {
		if t := s.Digest["gitTree"]; t != "" {
			return t
		}
	}
	return ""
}
