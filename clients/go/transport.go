package tokenvault

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// reply is a whole answer: status, headers and body.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) decode(value any) error {
	if err := json.Unmarshal(r.body, value); err != nil {
		return fmt.Errorf("tokenvault: unexpected answer (%d): %w", r.status, err)
	}
	return nil
}

// unixTransport is HTTP/1.1 over the daemon's Unix socket, connections kept between calls.
func unixTransport(socketPath string) *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dialer net.Dialer
			return dialer.DialContext(ctx, "unix", socketPath)
		},
		MaxIdleConnsPerHost: 16,
		// Under the daemon's 30 s idle limit: net/http does not resend a PUT, POST or DELETE that
		// fails on a kept connection the daemon has just closed.
		IdleConnTimeout:    10 * time.Second,
		DisableCompression: true,
	}
}

// noRedirects keeps an answer's 3xx as it is: a redirect from an upstream through the proxy
// must reach the caller, never be followed (every host dials the daemon's socket, so a Location
// would land on the daemon's own routes).
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// refuse is the daemon's problem in an answer that is not the one asked for (read up to 1 MiB);
// it closes the answer.
func refuse(response *http.Response) error {
	defer response.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(response.Body, 1<<20))
	return problemFrom(response.StatusCode, response.Header.Get("Content-Type"), data)
}

// allPages is every item of a paged listing: page is asked for the page after each cursor (""
// first) until there is none. A daemon repeating a cursor would otherwise keep us here for ever.
func allPages[T any](page func(cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	seen := map[string]bool{}
	cursor := ""
	for {
		items, next, err := page(cursor)
		all = append(all, items...)
		if err != nil || next == "" {
			return all, err
		}
		if seen[next] {
			return all, fmt.Errorf("tokenvault: the daemon returned the same list cursor twice")
		}
		seen[next] = true
		cursor = next
	}
}

// credentialPath is /v1/credentials/{namespace}/{name}{suffix}, each part escaped.
func credentialPath(id, suffix string) (string, error) {
	parts := strings.Split(id, "/")
	if len(parts) != 2 {
		return "", fmt.Errorf("tokenvault: %q is not a credential id (namespace/name)", id)
	}
	for _, part := range parts {
		if part == "" || part == "." || part == ".." {
			return "", fmt.Errorf("tokenvault: %q is not a credential id (namespace/name)", id)
		}
	}
	return "/v1/credentials/" + url.PathEscape(parts[0]) + "/" + url.PathEscape(parts[1]) + suffix, nil
}

// open sends a request and returns the answer with its body unread: the one place a request is made.
func (c *Client) open(
	ctx context.Context, method, target string, query url.Values, body io.Reader, header http.Header,
) (*http.Response, error) {
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	request, err := http.NewRequestWithContext(ctx, method, "http://localhost"+target, body)
	if err != nil {
		return nil, fmt.Errorf("tokenvault: %w", err)
	}
	for name, values := range header {
		request.Header[name] = values
	}
	response, err := c.http.Do(request)
	if err != nil {
		return nil, fmt.Errorf("tokenvault: cannot talk to the daemon on %s: %w", c.SocketPath, err)
	}
	return response, nil
}

// send makes a request whose answer is read whole; a status not in expect is the daemon's Problem.
func (c *Client) send(
	ctx context.Context, method, path string, query url.Values, document any, expect ...int,
) (reply, error) {
	header := http.Header{"Accept": {"application/json"}}
	var body io.Reader
	switch value := document.(type) {
	case nil:
	case []byte:
		body = bytes.NewReader(value)
		header.Set("Content-Type", "application/json")
	default:
		encoded, err := json.Marshal(value)
		if err != nil {
			return reply{}, fmt.Errorf("tokenvault: %w", err)
		}
		body = bytes.NewReader(encoded)
		header.Set("Content-Type", "application/json")
	}
	response, err := c.open(ctx, method, path, query, body, header)
	if err != nil {
		return reply{}, err
	}
	defer response.Body.Close()
	data, err := io.ReadAll(response.Body)
	if err != nil {
		return reply{}, fmt.Errorf("tokenvault: the answer broke off: %w", err)
	}
	if len(expect) == 0 {
		expect = []int{http.StatusOK}
	}
	for _, status := range expect {
		if response.StatusCode == status {
			return reply{response.StatusCode, response.Header, data}, nil
		}
	}
	return reply{}, problemFrom(response.StatusCode, response.Header.Get("Content-Type"), data)
}
