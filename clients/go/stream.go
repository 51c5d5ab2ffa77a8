package tokenvault

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// Stream is an NDJSON answer (Watch, Events), decoded a line at a time as it arrives. The request
// is made when the stream is opened, so nothing after that is missed.
type Stream[T any] struct {
	body   io.ReadCloser
	reader *bufio.Reader
	closed atomic.Bool
}

func openStream[T any](ctx context.Context, c *Client, path string) (*Stream[T], error) {
	response, err := c.open(ctx, http.MethodGet, path, nil, nil, http.Header{"Accept": {"application/x-ndjson"}})
	if err != nil {
		return nil, err
	}
	if response.StatusCode != http.StatusOK {
		return nil, refuse(response)
	}
	return &Stream[T]{body: response.Body, reader: bufio.NewReader(response.Body)}, nil
}

// Next is the next item. io.EOF: the daemon ended the stream (the credential was deleted, the
// daemon stopped) or Close ended it; any other error: the stream broke or its context ended.
func (s *Stream[T]) Next() (T, error) {
	var item T
	for {
		line, err := s.reader.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if len(line) == 1 {
				continue
			}
			if decodeErr := json.Unmarshal(line, &item); decodeErr != nil {
				return item, fmt.Errorf("tokenvault: a stream line is not what the API promises: %w", decodeErr)
			}
			return item, nil
		}
		if err == io.EOF || (err != nil && s.closed.Load()) {
			return item, io.EOF
		}
		if err != nil {
			return item, fmt.Errorf("tokenvault: the stream broke off: %w", err)
		}
	}
}

// Close ends the stream; from another goroutine, its Next then returns io.EOF.
func (s *Stream[T]) Close() error {
	s.closed.Store(true)
	return s.body.Close()
}
