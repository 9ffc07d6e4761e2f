package tcpproxy

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echoServer answers every line it reads with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends one line on c and reads the answer, with a deadline.
func roundTrip(c net.Conn, r *bufio.Reader) (string, error) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestProxyForwardsCutsAndHeals(t *testing.T) {
	p, err := Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r); err != nil || got != "ping\n" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}

	p.Cut()
	if got, err := roundTrip(c, r); err == nil {
		t.Fatalf("an open connection still answered %q after the cut", got)
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		defer c2.Close()
		if got, err := roundTrip(c2, bufio.NewReader(c2)); err == nil {
			t.Fatalf("a new connection answered %q during the cut", got)
		}
	}

	p.Heal()
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if got, err := roundTrip(c3, bufio.NewReader(c3)); err != nil || got != "ping\n" {
		t.Fatalf("after healing: %q, %v", got, err)
	}
}
