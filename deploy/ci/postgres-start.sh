#!/bin/sh
set -e
bin=/usr/lib/postgresql/15/bin
data=/var/lib/postgresql/data/pgdata
if [ ! -s "$data/PG_VERSION" ]; then
  mkdir -p "$data"
  echo "$POSTGRES_PASSWORD" >/tmp/pw
  "$bin/initdb" -D "$data" -U "$POSTGRES_USER" --pwfile=/tmp/pw --auth=scram-sha-256 >/dev/null
  rm /tmp/pw
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$data/pg_hba.conf"
  "$bin/pg_ctl" -D "$data" -o "-c listen_addresses='' -c unix_socket_directories=/tmp" -w start >/dev/null
  PGPASSWORD="$POSTGRES_PASSWORD" "$bin/createdb" -h /tmp -U "$POSTGRES_USER" "$POSTGRES_DB"
  "$bin/pg_ctl" -D "$data" -w stop >/dev/null
fi
exec "$bin/postgres" -D "$data" -c listen_addresses='*' -c unix_socket_directories=/tmp
