import sys
sys.path.insert(0, sys.argv[1])
from triple_py import _triple
style, n = sys.argv[2], int(sys.argv[3])
ch = _triple.Channel("127.0.0.1", "1")
ch.close()
call = ch.call
payload = b"x" * 128
for _ in range(n):
    try:
        if style == "four":
            call("/s/m", payload, None, None)
        elif style == "positional":
            call("/s/m", payload, None, None, True, 0, 0, -1)
        else:
            call("/s/m", payload, None, None, wait=True, notify=0, compression=-1)
    except ValueError:
        pass
