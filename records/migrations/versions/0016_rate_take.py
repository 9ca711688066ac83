"""The rate limit's token in one statement: holon_ledger_apply takes it with one UPDATE

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01

Migration 0013's function locked a rate-limited reservation's bucket up
front (a statement), read it (another), and wrote it (a third), after
reading its budget (a fourth) and before holding the budget (a fifth); a
reservation without a limit checks and holds its budget in one UPDATE.
Here the bucket's refill, check and take are one UPDATE (which also checks
the budget, so a call the budget refuses still takes no token), then the
budget's hold: two statements where there were five, and about a third
less of the server time a rate limit adds to a group (CHANGELOG.md, "Performance
work").
The bucket's row is locked by that UPDATE, after every budget of the
group, so the lock order of 0013 holds; a group with the reservations of
several rate-limited mandates still locks their buckets up front, in id
order. `holon_rate_level` is records._rate.refill's level, in SQL (an
inlined SQL function, so the arithmetic is written once).

The bucket's semantics do not change (records._rate; the tests run the
Python path and this function on the same writes and compare): a
concurrent take of the same bucket waits for the row and is checked again
on the version it waited for, so no two takes share a token. A take that
finds no whole token in the version it reads refuses without waiting for
a concurrent one: that take can only have left less by this statement's
clock (its own clock earlier) or refilled to a later clock than this one,
so the refusal is what taking them in clock order gives.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

LEVEL = r"""
CREATE OR REPLACE FUNCTION holon_rate_level(
    p_level bigint, p_at timestamptz, p_clock timestamptz, p_units numeric, p_capacity numeric
) RETURNS numeric LANGUAGE sql IMMUTABLE AS $fn$
-- records._rate.refill: the level at p_clock, refilled for every whole microsecond since
-- p_at and capped at the burst; a clock behind the bucket's time refills nothing.
    SELECT CASE WHEN p_clock <= p_at THEN LEAST(p_level, p_capacity)
        ELSE LEAST(p_level + floor(EXTRACT(EPOCH FROM p_clock - p_at) * 1000000) * p_units,
                   p_capacity) END
$fn$
"""

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
    -- rate buckets (by mandate, created empty at the epoch) where there are several,
    -- else the one is locked by its take, after the budgets all the same.
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
    -- A group with one rate-limited mandate (the usual case) locks its bucket with the
    -- UPDATE that takes the token: after every budget, so the order holds all the same.
    FOR k IN
        SELECT m FROM (
            SELECT DISTINCT x->>'m' AS m FROM jsonb_array_elements(p_reserves) x
            WHERE x ? 'units'
        ) t WHERE (SELECT count(DISTINCT x->>'m') FROM jsonb_array_elements(p_reserves) x
                   WHERE x ? 'units') > 1
        ORDER BY 1
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
    <<reservations>>
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
        ELSIF r->>'units' IS NOT NULL THEN
            -- A rate limit: the token's refill, check and take are one UPDATE, which
            -- also checks the budget (a call the budget refuses takes no token); then
            -- the budget's hold. Concurrent takes of one bucket are serialised by the
            -- row lock, and each is checked again on the version it waited for.
            LOOP
                UPDATE rate_buckets SET
                    level = (holon_rate_level(level, updated_at, clock, (r->>'units')::numeric,
                                              (r->>'capacity')::numeric) - unit)::bigint,
                    updated_at = GREATEST(updated_at, clock)
                WHERE mandate_id = r->>'m'
                  AND holon_rate_level(level, updated_at, clock, (r->>'units')::numeric,
                                       (r->>'capacity')::numeric) >= unit
                  AND (r->>'p' IS NULL OR EXISTS (
                      SELECT 1 FROM budgets WHERE mandate_id = r->>'m' AND period = r->>'p'
                        AND spent_usd::numeric + reserved_usd::numeric + (r->>'cap')::numeric
                            <= (r->>'amount')::numeric));
                EXIT WHEN FOUND;
                -- Refused: by the budget (checked first), or by the bucket.
                IF r->>'p' IS NOT NULL THEN
                    SELECT spent_usd::numeric, reserved_usd::numeric INTO spent, held
                        FROM budgets WHERE mandate_id = r->>'m' AND period = r->>'p';
                    -- A hold left by a crashed call counts until it expires.
                    IF spent + held + (r->>'cap')::numeric > (r->>'amount')::numeric THEN
                        r_out := r_out || json_build_object(
                            'budget', json_build_array(spent::text, held::text));
                        CONTINUE reservations;
                    END IF;
                END IF;
                SELECT level, updated_at INTO k FROM rate_buckets WHERE mandate_id = r->>'m';
                IF FOUND THEN
                    lvl := holon_rate_level(k.level, k.updated_at, clock,
                                            (r->>'units')::numeric, (r->>'capacity')::numeric);
                    r_out := r_out || json_build_object(
                        'rate', json_build_array(lvl::text, GREATEST(k.updated_at, clock)));
                    CONTINUE reservations;
                END IF;
                -- The bucket's first use: made empty at the epoch (the refill fills it),
                -- unless another group just made it; then the take again.
                INSERT INTO rate_buckets (mandate_id, level, updated_at)
                    VALUES (r->>'m', 0, '1970-01-01T00:00:00+00:00') ON CONFLICT DO NOTHING;
            END LOOP;
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


def _previous() -> str:
    """Migration 0013's function (the one this replaces), from its own file."""
    path = Path(__file__).with_name("0013_ledger_apply.py")
    spec = importlib.util.spec_from_file_location("holon_migration_0013", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.FUNCTION)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(LEVEL)
        op.execute(FUNCTION)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_previous())
        op.execute(
            "DROP FUNCTION holon_rate_level(bigint, timestamptz, timestamptz, numeric, numeric)"
        )
