FROM python:3.11-slim
WORKDIR /app
ENV HF_HUB_OFFLINE=1 PIP_NO_CACHE_DIR=1
COPY pyproject.toml README.md ./
COPY . .
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu && pip install .
EXPOSE 8000
# Serving the network needs API keys: without ENGRAMLOG_API_KEYS=key:tenant,... the API has no authentication and
# refuses to start on 0.0.0.0 (api/main.py). `docker run -e ENGRAMLOG_API_KEYS=... engramlog`.
# Idle connections kept 75 s, past clients' pool expiry (ENGRAMLOG_KEEP_ALIVE_S, which `engramlog up` passes).
CMD ["uvicorn", "api.main:app", "--host", "0.0.0.0", "--port", "8000", "--timeout-keep-alive", "75"]
