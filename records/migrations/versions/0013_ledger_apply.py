"""The ledger's group commit as one statement on PostgreSQL: holon_ledger_apply

Revision ID: 0013
Revises: 0010
Create Date: 2026-12-01

A function, so that a group of ledger writes (settlements, reservations with
their budget check and rate-limit token, denials, and the live-conformance
counts) is one statement, one round trip and, called in autocommit, one
transaction whose row locks last that one statement (records/_ledger_pg.py).
It does what `LedgerRegistry._apply_in` does in Python, in the same order and
with the same arithmetic (exact numeric money, integer rate units); the
tests run both on the same writes and compare.

Ledger rows are inserted with `json_populate_record(NULL::ledger, …)`: every
column of the table by name, so a new ledger column needs no new function.
A change to the budgets, rate_buckets or live_conformance tables, or to the
ledger's settle columns, needs a migration that replaces the function.
SQLite has no such function (its writes are local and already one
transaction on the event loop).
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

FUNCTION = r"""
CREATE OR REPLACE FUNCTION holon_ledger_apply(
    p_now timestamptz, p_day text, p_settles jsonb, p_reserves jsonb, p_rows json,
    p_denies json
) RETURNS json LANGUAGE plpgsql AS $fn$
-- p_settles: [{id, cost, cost_source, outcome_code, latency_ms}]
-- p_reserves: [{m, p, cap, amount, units, capacity}], p_rows[i] the row of p_reserves[i]
-- (json, not jsonb: a row's details are stored as written); p_denies: rows.
DECLARE
    unit CONSTANT bigint := 3600000000;  -- records._rate.UNITS_PER_TOKEN
    s jsonb;
    r jsonb;
    k record;
    l ledger%ROWTYPE;
    n int := 0;
    charged numeric;
    spent numeric;
    held numeric;
    lvl numeric;
    at timestamptz;
    clock timestamptz := statement_timestamp();  -- records._rate: the store's clock
    granted int[] := '{}';
    settled jsonb[] := '{}';
    s_out json[] := '{}';
    r_out json[] := '{}';
BEGIN
    -- Settlements alone commit without waiting for the WAL flush: one lost to a crash
    -- of the server leaves its reservation to expire, charged in full, as a gateway
    -- that dies just after its answers does (docs/architecture.md). Reservations and
    -- denials always wait for it.
    IF jsonb_array_length(p_reserves) = 0 AND json_array_length(p_denies) = 0 THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    -- Locks, each kind in key order: the rows to settle (by id); every budget of the
    -- group once (those of the rows still held, and the reservations', created where
    -- missing), so two groups never wait on each other in a cycle; the reservations'
    -- rate buckets (by mandate, created empty at the epoch).
    IF jsonb_array_length(p_settles) > 1 THEN
        PERFORM 1 FROM ledger
            WHERE id IN (SELECT x->>'id' FROM jsonb_array_elements(p_settles) x)
            ORDER BY id FOR UPDATE;
    END IF;
    FOR k IN
        SELECT m, p, bool_or(make) AS make FROM (
            SELECT g.mandate_id AS m, g.period AS p, false AS make FROM ledger g
            WHERE jsonb_array_length(p_settles) > 0
              AND g.id IN (SELECT x->>'id' FROM jsonb_array_elements(p_settles) x)
              AND g.status IN ('reserved', 'expired')
              AND g.mandate_id IS NOT NULL AND g.period IS NOT NULL
            UNION ALL
            SELECT x->>'m', x->>'p', true
            FROM jsonb_array_elements(p_reserves) x WHERE x->>'p' IS NOT NULL
        ) t GROUP BY m, p ORDER BY m, p
    LOOP
        PERFORM 1 FROM budgets WHERE mandate_id = k.m AND period = k.p FOR UPDATE;
        IF NOT FOUND AND k.make THEN
            INSERT INTO budgets (mandate_id, period, spent_usd, reserved_usd, updated_at)
                VALUES (k.m, k.p, '0', '0', p_now) ON CONFLICT DO NOTHING;
            PERFORM 1 FROM budgets WHERE mandate_id = k.m AND period = k.p FOR UPDATE;
        END IF;
    END LOOP;
    FOR k IN
        SELECT DISTINCT x->>'m' AS m FROM jsonb_array_elements(p_reserves) x
        WHERE x ? 'units' ORDER BY 1
    LOOP
        PERFORM 1 FROM rate_buckets WHERE mandate_id = k.m FOR UPDATE;
        IF NOT FOUND THEN
            INSERT INTO rate_buckets (mandate_id, level, updated_at)
                VALUES (k.m, 0, '1970-01-01T00:00:00+00:00') ON CONFLICT DO NOTHING;
            PERFORM 1 FROM rate_buckets WHERE mandate_id = k.m FOR UPDATE;
        END IF;
    END LOOP;

    -- Settlements first (they free budget).
    FOR s IN SELECT x FROM jsonb_array_elements(p_settles) x LOOP
        SELECT * INTO l FROM ledger WHERE id = s->>'id' FOR UPDATE;
        IF NOT FOUND THEN
            s_out := s_out || 'null'::json;
            CONTINUE;
        END IF;
        IF l.status NOT IN ('reserved', 'expired') THEN  -- settled already: idempotent
            s_out := s_out || row_to_json(l);
            CONTINUE;
        END IF;
        charged := LEAST((s->>'cost')::numeric, l.reserved_usd::numeric);
        IF l.mandate_id IS NOT NULL AND l.period IS NOT NULL THEN
            IF l.status = 'reserved' THEN
                UPDATE budgets SET
                    reserved_usd = GREATEST(reserved_usd::numeric
                                            - l.reserved_usd::numeric, 0)::text,
                    spent_usd = (spent_usd::numeric + charged)::text,
                    updated_at = p_now
                WHERE mandate_id = l.mandate_id AND period = l.period;
            ELSE  -- expired: its hold was charged in full; the outcome corrects that
                UPDATE budgets SET
                    spent_usd = (GREATEST(spent_usd::numeric - l.cost_usd::numeric, 0)
                                 + charged)::text,
                    updated_at = p_now
                WHERE mandate_id = l.mandate_id AND period = l.period;
            END IF;
        END IF;
        UPDATE ledger SET
            status = 'settled', cost_usd = charged::text,
            cost_source = s->>'cost_source', outcome_code = s->>'outcome_code',
            latency_ms = (s->>'latency_ms')::double precision, settled_at = p_now
        WHERE id = l.id RETURNING * INTO l;
        s_out := s_out || row_to_json(l);
        IF l.outcome_code IN ('ok', 'invalid_output') AND coalesce(l.agent_id, '') <> '' THEN
            settled := settled || jsonb_build_object(
                'a', l.agent_id, 'c', l.capability, 'v', l.outcome_code = 'invalid_output');
        END IF;
    END LOOP;

    -- Reservations, in arrival order.
    FOR r IN SELECT x FROM jsonb_array_elements(p_reserves) x LOOP
        n := n + 1;
        IF r->>'p' IS NOT NULL AND r->>'units' IS NULL THEN
            -- The budget alone: its check and its hold are one UPDATE.
            UPDATE budgets SET
                reserved_usd = (reserved_usd::numeric + (r->>'cap')::numeric)::text,
                updated_at = p_now
            WHERE mandate_id = r->>'m' AND period = r->>'p'
              AND spent_usd::numeric + reserved_usd::numeric + (r->>'cap')::numeric
                  <= (r->>'amount')::numeric;
            IF NOT FOUND THEN
                SELECT spent_usd::numeric, reserved_usd::numeric INTO spent, held
                    FROM budgets WHERE mandate_id = r->>'m' AND period = r->>'p';
                r_out := r_out || json_build_object(
                    'budget', json_build_array(spent::text, held::text));
                CONTINUE;
            END IF;
        ELSE
            IF r->>'p' IS NOT NULL THEN
                SELECT spent_usd::numeric, reserved_usd::numeric INTO spent, held
                    FROM budgets WHERE mandate_id = r->>'m' AND period = r->>'p';
                -- A hold left by a crashed call counts until it expires.
                IF spent + held + (r->>'cap')::numeric > (r->>'amount')::numeric THEN
                    r_out := r_out || json_build_object(
                        'budget', json_build_array(spent::text, held::text));
                    CONTINUE;
                END IF;
            END IF;
            -- After the budget: a call the budget refuses takes no token.
            IF r->>'units' IS NOT NULL THEN
                SELECT level, updated_at INTO k FROM rate_buckets WHERE mandate_id = r->>'m';
                IF clock <= k.updated_at THEN  -- the bucket's time never goes back
                    lvl := LEAST(k.level, (r->>'capacity')::numeric);
                    at := k.updated_at;
                ELSE
                    lvl := LEAST(
                        k.level + floor(EXTRACT(EPOCH FROM clock - k.updated_at) * 1000000)
                                  * (r->>'units')::numeric,
                        (r->>'capacity')::numeric);
                    at := clock;
                END IF;
                IF lvl < unit THEN
                    r_out := r_out || json_build_object('rate', json_build_array(lvl::text, at));
                    CONTINUE;
                END IF;
                UPDATE rate_buckets SET level = (lvl - unit)::bigint, updated_at = at
                    WHERE mandate_id = r->>'m';
            END IF;
            IF r->>'p' IS NOT NULL THEN
                UPDATE budgets SET
                    reserved_usd = (reserved_usd::numeric + (r->>'cap')::numeric)::text,
                    updated_at = p_now
                WHERE mandate_id = r->>'m' AND period = r->>'p';
            END IF;
        END IF;
        granted := granted || n;
        r_out := r_out || 'true'::json;
    END LOOP;

    -- Every new row in one INSERT: the granted reservations' and the denials'.
    IF cardinality(granted) > 0 OR json_array_length(p_denies) > 0 THEN
        INSERT INTO ledger
        SELECT g.* FROM json_array_elements(p_rows) WITH ORDINALITY AS t(x, i),
            LATERAL json_populate_record(NULL::ledger, t.x) AS g
            WHERE t.i = ANY(granted)
        UNION ALL
        SELECT * FROM json_populate_recordset(NULL::ledger, p_denies);
    END IF;

    -- Live conformance (records._conformance), one upsert per (agent, capability) in
    -- key order, after the budget rows.
    IF cardinality(settled) > 0 OR strpos(p_denies::text, '"invalid_input"') > 0 THEN
        INSERT INTO live_conformance AS c
            (agent_id, capability, day, calls, violations, input_violations)
        SELECT a, cap, p_day, sum(calls), sum(bad), sum(inputs) FROM (
            SELECT x->>'a' AS a, x->>'c' AS cap, 1 AS calls, (x->>'v')::bool::int AS bad,
                   0 AS inputs
            FROM unnest(settled) x
            UNION ALL
            SELECT coalesce(x->>'agent_id', ''), x->>'capability', 0, 0, 1
            FROM json_array_elements(p_denies) x WHERE x->>'reason' = 'invalid_input'
        ) t GROUP BY a, cap ORDER BY a, cap
        ON CONFLICT (agent_id, capability, day) DO UPDATE SET
            calls = c.calls + excluded.calls,
            violations = c.violations + excluded.violations,
            input_violations = c.input_violations + excluded.input_violations;
    END IF;

    RETURN json_build_object('settles', array_to_json(s_out), 'reserves', array_to_json(r_out));
END
$fn$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(FUNCTION)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION holon_ledger_apply(timestamptz, text, jsonb, jsonb, json, json)")
