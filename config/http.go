package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// DefaultListen is the address of an http block that names none.
const DefaultListen = "127.0.0.1:8080"

// HTTP is the http block: `queuectl run` serves the dashboard, the JSON API,
// /metrics and the health checks from the service process.
type HTTP struct {
	Listen string // host:port
	// TokenFile and ViewerTokenFile hold the admin and viewer tokens; paths
	// are made absolute relative to the file's directory. "" falls back to
	// QUEUECTL_HTTP_TOKEN and QUEUECTL_HTTP_VIEWER_TOKEN.
	TokenFile       string
	ViewerTokenFile string
}

var httpSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "listen"}, {Name: "token_file"}, {Name: "viewer_token_file"},
}}

func (d *decoder) decodeHTTP(b *hcl.Block) *HTTP {
	content, diags := b.Body.Content(httpSchema)
	d.diags = append(d.diags, diags...)
	h := &HTTP{Listen: DefaultListen}
	if attr, ok := content.Attributes["listen"]; ok {
		if s, ok := d.str(attr); ok {
			if err := CheckListen(s); err != nil {
				d.attrError(attr, "Invalid listen address", err.Error()+".")
			} else {
				h.Listen = s
			}
		}
	}
	files := map[string]*hcl.Attribute{}
	tokens := map[string]*hcl.Attribute{}
	for _, a := range []struct {
		name string
		dst  *string
	}{{"token_file", &h.TokenFile}, {"viewer_token_file", &h.ViewerTokenFile}} {
		attr, ok := content.Attributes[a.name]
		if !ok {
			continue
		}
		s, ok := d.str(attr)
		if !ok || s == "" {
			continue
		}
		written, where := s, ""
		if !filepath.IsAbs(s) {
			s, where = filepath.Join(d.dir, s), " (next to the file)"
		}
		if other, dup := files[s]; dup {
			d.attrError(attr, "Same token file twice",
				fmt.Sprintf("The admin and viewer tokens must differ; %s names the same file at %s.", a.name, pos(other.Range)))
			continue
		}
		files[s] = attr
		if st, err := os.Stat(s); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			d.attrError(attr, "Token file not found", fmt.Sprintf("%s %q%s: %v.", a.name, written, where, err))
			continue
		} else if st.IsDir() {
			d.attrError(attr, "Token file not found", fmt.Sprintf("%s %q is a directory.", a.name, written))
			continue
		}
		// As run reads it, so that validate and run agree.
		token, err := ReadToken(s)
		if err != nil {
			d.attrError(attr, "Invalid token file", fmt.Sprintf("%s %q%s: %v.", a.name, written, where, err))
			continue
		}
		if other, dup := tokens[token]; dup {
			d.attrError(attr, "Same token twice",
				fmt.Sprintf("The admin and viewer tokens must differ; %s holds the token of the file at %s.", a.name, pos(other.Range)))
			continue
		}
		tokens[token] = attr
		*a.dst = s
	}
	return h
}

// ReadToken reads a token file: one token on one line, surrounding white
// space dropped. An empty file, or one of several lines (neither an
// Authorization header nor the sign-in form carries a line break), is an
// error that does not quote the file.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", errors.New("the file is empty")
	}
	if strings.ContainsAny(token, "\r\n") {
		return "", errors.New("the file holds more than one line: a token file holds one token")
	}
	return token, nil
}

// CheckListen accepts host:port with a port from 0 to 65535; an empty host
// means every interface. `queuectl serve --listen` checks the same way.
func CheckListen(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. \"127.0.0.1:8080\" or \":8080\")", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: the port must be a number from 0 to 65535", s)
	}
	return nil
}
