# Halyard's container image: `serve` by default (mount a config, set the secrets), `dev` works too
# (a local anvil devnet inside the container). See README "Deploy".
#   docker build -t halyard .
#   docker run -p 8080:8080 -v halyard-data:/data halyard dev
#   docker run -p 8080:8080 -v halyard-data:/data -v ./halyard.yaml:/etc/halyard/halyard.yaml:ro \
#     -e HALYARD_SECRET_KEY=… -e HALYARD_PUBLIC_URL=https://… -e DATABASE_URL=… -e REDIS_URL=… halyard
ARG NODE_IMAGE=node:22-bookworm-slim

# Production dependencies only: no test SDKs, linters or TypeScript compiler.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HALYARD_HOST=0.0.0.0 \
    HALYARD_PORT=8080 \
    HALYARD_DATA_DIR=/data \
    HALYARD_CONFIG=/etc/halyard/halyard.yaml \
    HALYARD_CACHE_DIR=/home/node/.cache/halyard
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json LICENSE NOTICE README.md CHANGELOG.md ./
COPY bin ./bin
COPY src ./src
# The sources' JavaScript build (bin/build-cache.mjs) is made now, so no container builds it at
# start; the data dir belongs to the unprivileged user the server runs as.
RUN node bin/halyard.mjs --help >/dev/null \
 && mkdir -p /data /etc/halyard /home/node/.cache/halyard \
 && chown node:node /data /home/node/.cache/halyard
USER node
VOLUME ["/data"]
EXPOSE 8080
# Liveness only (/ready also checks the database, Redis and upstreams: use it in the load balancer).
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.HALYARD_PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 and stops the server itself on SIGTERM (src/cli/run-server.ts): no init wrapper.
ENTRYPOINT ["node", "bin/halyard.mjs"]
CMD ["serve"]
