package pages

import (
	"errors"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestDummyHashCostsAsMuchAsAPassword: an unknown name is compared against dummyHash,
// which must take as long as a real password's check, so it must be a well-formed
// hash of the cost passwords are hashed at.
func TestDummyHashCostsAsMuchAsAPassword(t *testing.T) {
	t.Parallel()
	cost, err := bcrypt.Cost([]byte(dummyHash))
	if err != nil || cost != bcrypt.DefaultCost {
		t.Fatalf("dummyHash cost %d (%v), want %d", cost, err, bcrypt.DefaultCost)
	}
	if err := bcrypt.CompareHashAndPassword([]byte(dummyHash), []byte("guess")); !errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
		t.Fatalf("comparing against dummyHash: %v, want a mismatch", err)
	}
}
