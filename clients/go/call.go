package tokenvault

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// UpstreamResponse is the upstream's answer to a call through the proxy, its body still streaming.
// Close Body when done.
type UpstreamResponse struct {
	StatusCode int
	Header     http.Header
	Body       io.ReadCloser
	// Refreshed: the token was refused once, refreshed, and the call sent again.
	Refreshed bool
}

// Call sends method target through the daemon's proxy with the credential's token attached; this
// process never sees the token (credential:use is enough). target is a URL inside the provider
// instance's api_base_urls, or a path ("/v1/x?y=1") under the first of them. The upstream's answer
// is returned whatever its status; the daemon's own refusals (upstream_not_allowed,
// too_many_proxy_calls, an unreachable upstream) are a Problem.
func (c *Client) Call(
	ctx context.Context, id, method, target string, header http.Header, body io.Reader,
) (*UpstreamResponse, error) {
	absolute := !strings.HasPrefix(target, "/") && strings.Contains(target, "://")
	if !absolute && !strings.HasPrefix(target, "/") {
		return nil, fmt.Errorf("tokenvault: %q is neither a URL nor a path starting with /", target)
	}
	suffix := "/proxy"
	if !absolute {
		suffix += target
	}
	path, err := credentialPath(id, suffix)
	if err != nil {
		return nil, err
	}
	sent := header.Clone()
	if sent == nil {
		sent = http.Header{}
	}
	if absolute {
		sent.Set("TokenVault-Upstream-URL", target)
	}
	response, err := c.open(ctx, strings.ToUpper(method), path, nil, body, sent)
	if err != nil {
		return nil, err
	}
	marker := response.Header.Get("TokenVault-Proxy")
	if !strings.HasPrefix(marker, "upstream") {
		return nil, refuse(response)
	}
	response.Header.Del("TokenVault-Proxy")
	return &UpstreamResponse{
		StatusCode: response.StatusCode, Header: response.Header, Body: response.Body,
		Refreshed: strings.Contains(marker, "refreshed"),
	}, nil
}
