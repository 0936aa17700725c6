package main

import (
	"context"
	"errors"
	"io"
)

// runRunner is replaced by the runner pool's command.
func runRunner(ctx context.Context, args []string, out io.Writer) error {
	return errors.New("runner: not available yet")
}
