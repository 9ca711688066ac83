# Sourced by .ci/run: make a PostgreSQL server answer and export its admin URL
# as HOLON_TEST_POSTGRES_URL. Uses the machine's server on 127.0.0.1:5432 when
# it answers; otherwise installs Debian's PostgreSQL if needed and starts a
# private throw-away cluster (trust auth, 127.0.0.1 only), stopped on exit.
# HOLON_CI_PRIVATE_PG=1 forces the private cluster (to test this script).

pg_answers() {  # $1 port
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

if [ -z "${HOLON_CI_PRIVATE_PG:-}" ] && pg_answers 5432; then
    export HOLON_TEST_POSTGRES_URL="${HOLON_TEST_POSTGRES_URL:-postgresql+psycopg://postgres@127.0.0.1:5432/postgres}"
    echo "ci: using the PostgreSQL server on 127.0.0.1:5432"
else
    pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
        echo "ci: no PostgreSQL server answers; installing Debian's postgresql"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq postgresql >/dev/null
        pg_bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
    fi
    pg_port=54329
    pg_dir="$(mktemp -d /tmp/holon-ci-pg.XXXXXX)"
    as_pg=()
    if [ "$(id -u)" = 0 ]; then
        chown postgres:postgres "$pg_dir"
        as_pg=(runuser -u postgres --)
    fi
    "${as_pg[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -A trust -U postgres >/dev/null
    "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w \
        -o "-p $pg_port -k $pg_dir -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
    # shellcheck disable=SC2064
    trap "${as_pg[*]} $pg_bin/pg_ctl -D $pg_dir/data -m immediate stop >/dev/null 2>&1; rm -rf $pg_dir" EXIT
    export HOLON_TEST_POSTGRES_URL="postgresql+psycopg://postgres@127.0.0.1:$pg_port/postgres"
    echo "ci: started a private PostgreSQL on 127.0.0.1:$pg_port"
fi
