package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"
)

// target is one place on the network the probe tries to reach: -reach name=kind:addr.
type target struct{ name, kind, addr string }

var (
	targets        []target
	listInterfaces = flag.Bool("interfaces", false, "list the network interfaces the probe sees")
	netOnly        = flag.Bool("net-only", false, "try only the -reach targets, -interfaces and -api")
)

func init() {
	flag.Func("reach", "name=kind:addr — try to reach addr and read a line from it; kind is tcp, udp, mptcp, unix (@name is abstract) or icmp (an echo request over a raw socket); repeatable", func(v string) error {
		name, rest, ok1 := strings.Cut(v, "=")
		kind, addr, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			return errors.New("want name=kind:addr")
		}
		targets = append(targets, target{name, kind, addr})
		return nil
	})
}

// tryReach tries every -reach target and, with -interfaces, lists the network
// interfaces the probe sees ("interfaces: ok: lo eth0").
func tryReach() {
	for _, t := range targets {
		tryDetail(t.name, func() (string, error) { return reach(t) })
	}
	if *listInterfaces {
		tryDetail("interfaces", func() (string, error) {
			ifs, err := net.Interfaces()
			if err != nil {
				return "", err
			}
			names := make([]string, len(ifs))
			for i, ifc := range ifs {
				names[i] = ifc.Name
			}
			return strings.Join(names, " "), nil
		})
	}
}

// tryDetail makes one attempt and prints its verdict with what it got.
func tryDetail(name string, f func() (string, error)) {
	if got, err := f(); err != nil {
		fmt.Fprintf(out, "%s: denied: %v\n", name, err)
	} else {
		fmt.Fprintf(out, "%s: ok: %s\n", name, got)
	}
}

// reach connects to t and returns the first line the other end sends (for udp, after
// sending one datagram; for icmp, "echo reply" once one comes back).
func reach(t target) (string, error) {
	var c net.Conn
	var err error
	switch t.kind {
	case "tcp", "unix":
		c, err = net.DialTimeout(t.kind, t.addr, 2*time.Second)
	case "udp":
		if c, err = net.Dial("udp", t.addr); err == nil {
			_, err = c.Write([]byte("ping\n"))
		}
	case "mptcp":
		d := net.Dialer{Timeout: 2 * time.Second}
		d.SetMultipathTCP(true)
		if c, err = d.Dial("tcp", t.addr); err == nil && !isMPTCP(c) {
			err = errors.New("fell back to plain TCP")
		}
	case "icmp":
		return echo(t.addr)
	default:
		return "", fmt.Errorf("unknown kind %q", t.kind)
	}
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	return strings.TrimSpace(line), nil
}

// isMPTCP reports whether c really uses Multipath TCP (Go falls back silently).
func isMPTCP(c net.Conn) bool {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return false
	}
	on, err := tc.MultipathTCP()
	return err == nil && on
}

// echo sends an ICMP echo request to host over a raw socket and waits for the reply.
func echo(host string) (string, error) {
	c, err := net.DialIP("ip4:icmp", nil, &net.IPAddr{IP: net.ParseIP(host)})
	if err != nil {
		return "", err
	}
	defer c.Close()
	msg := []byte{8, 0, 0, 0, 0x43, 0x53, 0, 1, 'c', 's'} // type 8 echo, id "CS", seq 1
	binary.BigEndian.PutUint16(msg[2:], checksum(msg))
	if _, err := c.Write(msg); err != nil {
		return "", err
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 1500)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return "", fmt.Errorf("read: %w", err)
		}
		m := buf[:n]
		if n > 0 && m[0]>>4 == 4 { // Read on a raw IPv4 socket keeps the IP header
			m = m[min(n, int(m[0]&0xf)*4):]
		}
		if len(m) >= 8 && m[0] == 0 && m[4] == 0x43 && m[5] == 0x53 { // our echo reply
			return "echo reply", nil
		}
	}
}

func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}
