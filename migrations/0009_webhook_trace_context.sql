-- TokenVault schema, version 9: the trace context a webhook delivery carries.

-- A delivery caused by a request that carried W3C trace context (`traceparent`) is sent with it,
-- so the receiver's work joins the caller's trace. NULL for changes no request caused (a
-- scheduled refresh) and for rows written before this version.
ALTER TABLE webhook_deliveries ADD COLUMN traceparent TEXT;
