"""Schemas the engine's decoder tests share: typed attributes on a tiny model, the real tokenizer's
enumerations, and OA-Mine-like categories for the bundled model."""

from __future__ import annotations

from extraction.engine.api import REPO_ROOT, AttributeSpec, Document
from tests.support.tiny_models import TEXTS

REAL_TOKENIZER = REPO_ROOT / "models" / "slotwise-smollm2"


SLEEVES = ["3/4 Sleeve", "Long Sleeve", "Short Sleeve", "Sleeveless", "Strappy"]


COLORS = ["Black", "Navy Blue", "Green Tea Leaf Extra Long Name", "Red"]


TYPED = [
    AttributeSpec("Color", max_tokens=2, kind="enum", allowed_values=tuple(COLORS)),  # widened to fit
    AttributeSpec("Waterproof", max_tokens=3, kind="boolean"),
    AttributeSpec("Weight", max_tokens=6, kind="number", unit="g"),
    AttributeSpec("Brand", max_tokens=4),  # text: a span (extractive)
    AttributeSpec("Note", max_tokens=4, free=True),  # text, free
]


DOCS = [Document(str(i), t) for i, t in enumerate(TEXTS)] + [Document("w", "Rain boots 350 g waterproof")]


BUNDLED = REPO_ROOT / "models" / "slotwise-ave"


# OA-Mine categories (their dev schemas) and product titles like theirs
CATALOG = {
    "Shoes": (
        ["Brand", "Gender", "Model name", "Color", "Shoe type", "Material", "Size", "Sport", "Closure"],
        [
            "Clarks Women's Ashland Bubble Ankle Bootie, Navy Suede, 8.5 M US",
            "Skechers Men's Go Walk Max Slip-On Sneaker, Charcoal, 10 W US",
            "ASICS Women's Gel-Venture 7 Trail Running Shoes, 7.5, Black/Pink",
            "Dr. Martens 1460 Original 8-Eye Leather Boot, Cherry Red, 9 UK",
        ],
    ),
    "Coffee": (
        ["Brand", "Roast type", "Specialty", "Item form", "Container type", "Flavor", "Net content"]
        + ["Country", "Caffeine content", "Pack size", "Machine type"],
        [
            "Peet's Coffee Major Dickason's Blend Dark Roast Ground Coffee, 18 Ounce Bag",
            "Lavazza Super Crema Whole Bean Coffee Blend, Medium Espresso Roast, 2.2 Pound",
            "Folgers Classic Roast Instant Coffee Crystals, 8 Oz Canister",
            "Community Coffee Breakfast Blend K-Cup Pods, Medium Roast, 36 Count",
        ],
    ),
    "Breakfast Cereal": (
        ["Brand", "Sub brand", "Flavor", "Net content", "Pack size", "Specialty", "Container"]
        + ["Cereal type"],
        [
            "Kellogg's Frosted Flakes Breakfast Cereal, Original, 24 oz Box",
            "General Mills Cheerios Honey Nut Cereal, Gluten Free, 12 oz",
            "Post Honey Bunches of Oats with Almonds, Breakfast Cereal, 14.5 Ounce",
            "Nature's Path Organic Heritage Flakes Cereal, 13.25 Oz Box (Pack of 6)",
        ],
    ),
}
