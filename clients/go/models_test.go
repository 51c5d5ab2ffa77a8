package tokenvault_test

import (
	"encoding/json"
	"reflect"
	"testing"

	tokenvault "tokenvault.dev/client"
)

// A credential's metadata document, without a grant; members this client does not know yet are
// there to show they are skipped.
const credentialDocument = `{"id":"agents/reports","namespace":"agents","name":"reports",` +
	`"provider":"billing-api","kind":"oauth2","status":"active","generation":2,"scopes":["read"],` +
	`"labels":{},"issued_at":"2026-12-07T08:00:00.000Z","has_refresh_token":false,` +
	`"has_id_token":false,"created_at":"2026-12-07T08:00:00.000Z",` +
	`"updated_at":"2026-12-07T08:00:00.000Z","added_later":1`

func TestACredentialsGrantIsDecoded(t *testing.T) {
	var credential tokenvault.Credential
	document := credentialDocument + `,"grant":{"audience":["https://api.example"],` +
		`"requested_token_type":"urn:ietf:params:oauth:token-type:jwt","resource":[],"scopes":["read"],` +
		`"subject":"payments/bob","type":"token_exchange","added_later":true}}`
	if err := json.Unmarshal([]byte(document), &credential); err != nil {
		t.Fatal(err)
	}
	want := tokenvault.Grant{
		Type: "token_exchange", Scopes: []string{"read"}, Audience: []string{"https://api.example"},
		Resource: []string{}, Subject: "payments/bob", RequestedTokenType: "urn:ietf:params:oauth:token-type:jwt",
	}
	if credential.Grant == nil || !reflect.DeepEqual(*credential.Grant, want) {
		t.Fatalf("grant %+v, want %+v", credential.Grant, want)
	}
}

func TestACredentialWithoutAGrantHasNone(t *testing.T) {
	var credential tokenvault.Credential
	if err := json.Unmarshal([]byte(credentialDocument+"}"), &credential); err != nil {
		t.Fatal(err)
	}
	if credential.Grant != nil || credential.ID != "agents/reports" || credential.Generation != 2 {
		t.Fatalf("decoded %+v", credential)
	}
}
