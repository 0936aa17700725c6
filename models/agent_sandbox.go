package models

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Limits of an agent's sandbox settings.
const (
	maxSandboxPaths = 64
	maxSandboxPorts = 64
)

// AgentSandbox is what a worker agent's confined processes may reach besides their
// workspace, private temp dir and home: directories to read, directories to write
// (which they may read too), TCP ports to connect to, and whether they may open
// AF_UNIX sockets. Only an admin sets it, like the command; runner/sandbox enforces
// it. The zero value allows nothing more.
type AgentSandbox struct {
	Read      []string `json:"read,omitempty"`       // absolute, cleaned paths; never "/"
	Write     []string `json:"write,omitempty"`      // absolute, cleaned paths; never "/"
	Connect   []int    `json:"connect,omitempty"`    // TCP ports, 1-65535, ascending
	AllowUnix bool     `json:"allow_unix,omitempty"` // may open AF_UNIX sockets
}

// IsZero reports whether the sandbox allows nothing beyond the defaults.
func (s AgentSandbox) IsZero() bool {
	return len(s.Read) == 0 && len(s.Write) == 0 && len(s.Connect) == 0 && !s.AllowUnix
}

// Equal reports whether s and o allow the same.
func (s AgentSandbox) Equal(o AgentSandbox) bool {
	return slices.Equal(s.Read, o.Read) && slices.Equal(s.Write, o.Write) &&
		slices.Equal(s.Connect, o.Connect) && s.AllowUnix == o.AllowUnix
}

// Clone returns a deep copy of s.
func (s AgentSandbox) Clone() AgentSandbox {
	return AgentSandbox{Read: slices.Clone(s.Read), Write: slices.Clone(s.Write),
		Connect: slices.Clone(s.Connect), AllowUnix: s.AllowUnix}
}

// Normalize trims and cleans the absolute paths (a relative path is left for Validate
// to refuse), drops duplicates, and sorts and de-duplicates the ports.
func (s *AgentSandbox) Normalize() {
	s.Read, s.Write = normPaths(s.Read), normPaths(s.Write)
	ports := slices.Clone(s.Connect)
	slices.Sort(ports)
	s.Connect = slices.Compact(ports)
	if len(s.Connect) == 0 {
		s.Connect = nil
	}
}

func normPaths(in []string) []string {
	var out []string
	for _, p := range in {
		p = strings.TrimSpace(p)
		if filepath.IsAbs(p) {
			p = filepath.Clean(p)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// validate adds a message for each bad setting to fe, under sandbox.read,
// sandbox.write and sandbox.connect.
func (s *AgentSandbox) validate(fe *FieldErrors) {
	for field, paths := range map[string][]string{"sandbox.read": s.Read, "sandbox.write": s.Write} {
		if len(paths) > maxSandboxPaths {
			fe.Add(field, fmt.Sprintf("at most %d paths", maxSandboxPaths))
		}
		for _, p := range paths {
			if msg := sandboxPathProblem(p); msg != "" {
				fe.Add(field, msg)
			}
		}
	}
	if len(s.Connect) > maxSandboxPorts {
		fe.Add("sandbox.connect", fmt.Sprintf("at most %d ports", maxSandboxPorts))
	}
	for _, port := range s.Connect {
		if port < 1 || port > 65535 {
			fe.Add("sandbox.connect", fmt.Sprintf("port %d must be between 1 and 65535", port))
		}
	}
}

// sandboxPathProblem says what is wrong with a sandbox path, or "".
func sandboxPathProblem(p string) string {
	switch {
	case p == "":
		return "a path must not be empty"
	case strings.ContainsRune(p, 0):
		return "a path must not contain a NUL byte"
	case len(p) > 4096:
		return "a path must be at most 4096 bytes"
	case !filepath.IsAbs(p):
		return quote(p) + " is not an absolute path"
	case filepath.Clean(p) == "/":
		return "\"/\" would open the whole file system"
	}
	return ""
}
