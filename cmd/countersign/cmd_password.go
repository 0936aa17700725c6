package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/countersign/countersign/models"
)

// runAgentPassword is `countersign agent password NAME`: it sets a human agent's
// dashboard password at the console, against the database, as the operator (so a
// locked-out admin gets back in): the first line of standard input, or, when standard
// input is empty, a generated one it prints. A sign-in lockout of the account is
// lifted.
func runAgentPassword(ctx context.Context, args []string, out io.Writer) error {
	var c config
	fs := newFlags("agent password", "agent password NAME [flags] < password\n\nReads the new password from the first line of standard input; with nothing there, generates one and prints it.", out)
	storeFlags(fs, &c)
	name, err := parseWithName(fs, args, "agent NAME")
	if err != nil {
		return err
	}
	password, err := readPassword(os.Stdin, out)
	if err != nil {
		return err
	}
	generated := password == ""
	if generated {
		password = models.NewPassword()
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	name = strings.ToLower(strings.TrimSpace(name))
	if err := newService(db).Agents.SetPassword(ctx, models.System, name, "", password); err != nil {
		return describe(err)
	}
	if generated {
		fmt.Fprintf(out, "password of %s set; one-time password, shown only now: %s\n", name, password)
		return nil
	}
	fmt.Fprintf(out, "password of %s set\n", name)
	return nil
}

// readPassword reads the first line of in ("" when in is empty). At a terminal it
// asks for it first.
func readPassword(in *os.File, out io.Writer) (string, error) {
	if st, err := in.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
		fmt.Fprint(out, "New password (empty: generate one): ")
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("reading the password from stdin: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}
