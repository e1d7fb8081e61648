// Package traces defines the JSON Lines event stream a replay writes and classifies why a failed step failed.
package traces
