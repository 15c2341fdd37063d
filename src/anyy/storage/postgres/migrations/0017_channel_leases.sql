-- Channels (SPEC L4): which Gateway of a service polls each channel. A channel's holder keeps it while its
-- row in gateways lives (its heartbeat renews that row); once that Gateway is gone or has not been seen for
-- its lease, another Gateway takes the channel.
CREATE TABLE channel_leases (
    channel      TEXT NOT NULL PRIMARY KEY,
    owner        TEXT NOT NULL
);
