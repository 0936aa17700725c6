package egress

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Benchmarks of a CONNECT tunnel against a direct connection to the same
// local server, measured alternately in the same run so machine load hits
// both alike; each reports the ratio tunnel/direct. Run with:
//
//	go test -run '^$' -bench BenchmarkTunnelVsDirect -benchtime 200x ./runner/egress/

// sizeServer answers each 4-byte big-endian length n with n bytes, on
// every connection, until the client closes.
func sizeServer(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	payload := make([]byte, 4<<20)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var hdr [4]byte
				for {
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					if _, err := c.Write(payload[:binary.BigEndian.Uint32(hdr[:])]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// fetch asks for n bytes on c and reads them all.
func fetch(b *testing.B, c net.Conn, r io.Reader, buf []byte) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(buf)))
	if _, err := c.Write(hdr[:]); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(r, buf); err != nil {
		b.Fatal(err)
	}
}

// tunnel opens a CONNECT tunnel to target through proxy.
func tunnel(b *testing.B, proxy, target string) (net.Conn, io.Reader) {
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
		b.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("CONNECT: %v %v", resp, err)
	}
	return c, br
}

func benchProxy(b *testing.B, target string) string {
	p, err := New(Config{Allow: []string{target}, MaxEntries: 1})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(context.Background(), ln); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Stop(context.Background()) })
	return ln.Addr().String()
}

func BenchmarkTunnelVsDirect(b *testing.B) {
	target := sizeServer(b)
	proxy := benchProxy(b, target)

	b.Run("throughput-1MiB", func(b *testing.B) {
		dc, err := net.Dial("tcp", target)
		if err != nil {
			b.Fatal(err)
		}
		defer dc.Close()
		tc, tr := tunnel(b, proxy, target)
		defer tc.Close()
		buf := make([]byte, 1<<20)
		var direct, tunneled time.Duration
		for b.Loop() {
			t0 := time.Now()
			fetch(b, dc, dc, buf)
			t1 := time.Now()
			fetch(b, tc, tr, buf)
			direct, tunneled = direct+t1.Sub(t0), tunneled+time.Since(t1)
		}
		mb := float64(b.N) * float64(len(buf)) / 1e6
		b.ReportMetric(mb/direct.Seconds(), "direct-MB/s")
		b.ReportMetric(mb/tunneled.Seconds(), "tunnel-MB/s")
		b.ReportMetric(direct.Seconds()/tunneled.Seconds(), "tunnel/direct-throughput")
	})
	b.Run("roundtrip-1B", func(b *testing.B) {
		dc, err := net.Dial("tcp", target)
		if err != nil {
			b.Fatal(err)
		}
		defer dc.Close()
		tc, tr := tunnel(b, proxy, target)
		defer tc.Close()
		buf := make([]byte, 1)
		var direct, tunneled time.Duration
		for b.Loop() {
			t0 := time.Now()
			fetch(b, dc, dc, buf)
			t1 := time.Now()
			fetch(b, tc, tr, buf)
			direct, tunneled = direct+t1.Sub(t0), tunneled+time.Since(t1)
		}
		b.ReportMetric(float64(direct.Microseconds())/float64(b.N), "direct-µs")
		b.ReportMetric(float64(tunneled.Microseconds())/float64(b.N), "tunnel-µs")
		b.ReportMetric(tunneled.Seconds()/direct.Seconds(), "tunnel/direct-latency")
	})
	b.Run("connect-and-first-byte", func(b *testing.B) {
		buf := make([]byte, 1)
		var direct, tunneled time.Duration
		for b.Loop() {
			t0 := time.Now()
			dc, err := net.Dial("tcp", target)
			if err != nil {
				b.Fatal(err)
			}
			fetch(b, dc, dc, buf)
			t1 := time.Now()
			tc, tr := tunnel(b, proxy, target)
			fetch(b, tc, tr, buf)
			direct, tunneled = direct+t1.Sub(t0), tunneled+time.Since(t1)
			dc.Close()
			tc.Close()
		}
		b.ReportMetric(float64(direct.Microseconds())/float64(b.N), "direct-µs")
		b.ReportMetric(float64(tunneled.Microseconds())/float64(b.N), "tunnel-µs")
		b.ReportMetric(tunneled.Seconds()/direct.Seconds(), "tunnel/direct-latency")
	})
}
