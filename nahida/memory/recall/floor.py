"""The floor of recall by meaning: how near a question comes to lines that are not about it.

A question always has nearest neighbours, related or not, and how similar an unrelated line
looks depends on the model (the local e5 model crowds nearly every pair of texts into a narrow
high band; other models spread them wide) and, within one model, on the question (a chatty
Chinese question scores higher against everything than a short English one). So no constant
floor fits. Instead every query is compared with a fixed set of everyday lines about nothing a
question asks (`REFERENCES`, first person and not, Chinese and English, as memory's lines
are), embedded once per embedder as passages, like memory's texts: the mean similarity of
its `NEAREST` nearest references is what a line unrelated to it scores. A hit by meaning must
beat that by `Tuning.vector_floor` (`recall.vector`). The mean of a few, not the nearest
alone: a question may happen to touch one reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nahida.memory.store.values import Vector

NEAREST = 3
REFERENCES: tuple[str, ...] = (
    "我把打印机的墨盒换成了黑色的。",
    "我每周二晚上去楼下倒垃圾。",
    "我的自行车后胎昨天补好了。",
    "我上个月办了一张图书馆的借书证。",
    "我家的窗帘是浅灰色的。",
    "我习惯把钥匙挂在门口的钩子上。",
    "我在阳台上种了几盆薄荷。",
    "我的手机壳是透明的。",
    "小区的快递柜在三号楼旁边。",
    "这条公交线路早上六点发车。",
    "楼道里的灯坏了两天了。",
    "他把邮票收在一个铁盒子里。",
    "I replaced the batteries in the kitchen clock.",
    "I keep my spare keys in the top drawer.",
    "I usually take out the recycling on Thursday night.",
    "My desk lamp has a yellow shade.",
    "I renewed my library card last month.",
    "I fixed the squeaky hinge on the bedroom door.",
    "The parking garage closes at midnight.",
    "Her umbrella has a wooden handle.",
    "The stapler on the front desk is out of staples.",
    "He painted the fence white last summer.",
    "The elevator in the east wing is being repaired.",
    "The bus stop moved one block north.",
)


def unrelated(query: Vector, references: Vector) -> float:
    """How similar a line unrelated to the query is to it: the mean cosine similarity of its
    `NEAREST` nearest `references` (rows L2-normalised, as an `Embedder` returns them)."""
    scores = sorted((references @ query).tolist())
    nearest = scores[-NEAREST:]
    return sum(nearest) / len(nearest) if nearest else 0.0
