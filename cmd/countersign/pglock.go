package main

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
)

// publisherLockKey is the advisory lock that elects the one ledger publisher.
const publisherLockKey = 0x636f756e74657273 // "counters"

// pgLock is a PostgreSQL session advisory lock held on a dedicated connection: the
// lock lives exactly as long as that connection, so a dead process releases it.
type pgLock struct {
	url string
	key int64

	mu   sync.Mutex
	conn *pgx.Conn
	held bool
}

func newPGLock(url string, key int64) *pgLock { return &pgLock{url: url, key: key} }

// TryLock takes the lock if it is free; it reconnects when the connection dropped
// (which also lost the lock).
func (l *pgLock) TryLock(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil && l.conn.Ping(ctx) != nil {
		l.conn.Close(ctx)
		l.conn, l.held = nil, false
	}
	if l.held {
		return true, nil
	}
	if l.conn == nil {
		conn, err := pgx.Connect(ctx, l.url)
		if err != nil {
			return false, err
		}
		l.conn = conn
	}
	if err := l.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", l.key).Scan(&l.held); err != nil {
		return false, err
	}
	return l.held, nil
}

// Unlock releases the lock if held.
func (l *pgLock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held || l.conn == nil {
		return nil
	}
	l.held = false
	_, err := l.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", l.key)
	return err
}

// Close drops the connection and with it the lock.
func (l *pgLock) Close(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil
	}
	err := l.conn.Close(ctx)
	l.conn, l.held = nil, false
	return err
}
