package ledger

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// TopicMessage reads message sequence seq of an HCS topic from a mirror node's REST
// API (mirrorURL, e.g. https://testnet.mirrornode.hedera.com): the exact bytes the
// topic holds and their consensus time. It needs no account: anyone can read a topic.
func TopicMessage(ctx context.Context, client *http.Client, mirrorURL, topic string, seq int64) ([]byte, time.Time, error) {
	u := mirrorURL + "/api/v1/topics/" + url.PathEscape(topic) + "/messages/" + strconv.FormatInt(seq, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, time.Time{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("hcs: mirror node: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, time.Time{}, fmt.Errorf("hcs: mirror node answered %s for %s message %d", resp.Status, topic, seq)
	}
	var m struct {
		Message            string `json:"message"`
		ConsensusTimestamp string `json:"consensus_timestamp"`
		SequenceNumber     int64  `json:"sequence_number"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, time.Time{}, fmt.Errorf("hcs: mirror node reply: %w", err)
	}
	if m.SequenceNumber != seq {
		return nil, time.Time{}, fmt.Errorf("hcs: mirror node gave message %d for %d", m.SequenceNumber, seq)
	}
	b, err := base64.StdEncoding.DecodeString(m.Message)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("hcs: mirror message: %w", err)
	}
	return b, parseMirrorTime(m.ConsensusTimestamp), nil
}

// CheckOnTopic reads the entry's message from the topic (TopicMessage) and reports
// whether it is the entry's message byte for byte, returning its consensus time.
func CheckOnTopic(ctx context.Context, client *http.Client, mirrorURL, topic string, e []byte, seq int64) (time.Time, error) {
	got, at, err := TopicMessage(ctx, client, mirrorURL, topic, seq)
	if err != nil {
		return time.Time{}, err
	}
	if !bytes.Equal(got, e) {
		return time.Time{}, fmt.Errorf("hcs: topic %s message %d is not the entry's message", topic, seq)
	}
	return at, nil
}
