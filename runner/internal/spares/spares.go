// Package spares keeps files and directories a runner is done with, renamed aside, so
// that the next one it needs is a rename rather than a creation. On an ext4 without a
// journal every new inode is found by skipping those deleted in the last minute: a
// file made and removed per attempt slows every file creation on the host the busier
// it is, while a rename creates and deletes nothing.
package spares

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Stack is a bounded stack of spares in one directory. Its zero value is not usable:
// set Dir, Prefix and Max. It is safe for concurrent use.
type Stack struct {
	Dir    string // where spares are kept
	Prefix string // starts every spare's name; a spare is named Prefix and a number
	Max    int    // at most this many are kept

	mu    sync.Mutex
	paths []string
	n     int // numbers spares uniquely
}

// Take removes a spare from the stack and returns its path, "" when there is none.
// The caller owns it: rename it into place, or remove it.
func (s *Stack) Take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.paths)
	if n == 0 {
		return ""
	}
	p := s.paths[n-1]
	s.paths = s.paths[:n-1]
	return p
}

// Keep renames path to a new spare in Dir and reports whether it did; it does not
// when Max spares are kept already or the rename fails, and path is then untouched.
func (s *Stack) Keep(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.paths) >= s.Max {
		return false
	}
	s.n++
	spare := filepath.Join(s.Dir, fmt.Sprintf("%s%d", s.Prefix, s.n))
	if os.Rename(path, spare) != nil {
		return false
	}
	s.paths = append(s.paths, spare)
	return true
}
