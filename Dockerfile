# triage-bot: the Slack bot (Socket Mode or HTTP mode) with its knowledge base and migrations.
# Build: docker build -t triage-bot .     Run with PostgreSQL: docker compose up (see docker-compose.yml)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TRIAGE_SPOOL_PATH=/data/triage-bot.spool.jsonl

WORKDIR /app
RUN useradd --create-home --uid 10001 triage && mkdir -p /data && chown triage /data

# dependencies first, so a code change does not reinstall them
COPY pyproject.toml README.md ./
RUN mkdir triage_bot && touch triage_bot/__init__.py && pip install . && pip uninstall -y triage-bot && rm -rf triage_bot

# the package reads knowledge/ and migrations/ beside itself: install it in place
COPY triage_bot ./triage_bot
COPY knowledge ./knowledge
COPY migrations ./migrations
COPY manifest.yml docker/entrypoint.sh ./
RUN pip install --no-deps -e . && chmod 0755 /app/entrypoint.sh

USER triage
EXPOSE 3000
# entrypoint: migrate the database, then serve (Socket Mode when SLACK_APP_TOKEN is set, else HTTP on $PORT)
ENTRYPOINT ["/app/entrypoint.sh"]
