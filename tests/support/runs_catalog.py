"""A small catalog for run tests: two categories with schemas, products with real-looking titles."""

from catalog.models import Attribute, Catalog, Category, Product, SchemaVersion

SHOE_TITLES = [
    "Diesel Men's Exposure High-Top Sneaker black leather size 10",
    "Nike Air Zoom Pegasus running shoe blue mesh size 9",
    "Adidas Samba OG white leather sneaker size 8",
    "Clarks Desert Boot beige suede size 11",
    "Vans Old Skool black canvas skate shoe size 7",
    "Birkenstock Arizona sandal brown cork size 42",
]
COFFEE_TITLES = [
    "Lavazza Super Crema whole bean coffee 2.2 lb medium roast",
    "Starbucks Pike Place ground coffee 12 oz",
    "Illy Classico espresso ground coffee 250 g",
    "Peet's Major Dickason's blend dark roast 18 oz",
]


def make_schema(name: str, attributes: list[tuple[str, str, str, int]]) -> SchemaVersion:
    category, _ = Category.objects.get_or_create(name=name)
    version = (category.current_schema.version + 1) if category.current_schema else 1
    schema = SchemaVersion.objects.create(category=category, version=version)
    for position, (attr, description, unit, max_tokens) in enumerate(attributes):
        Attribute.objects.create(
            schema=schema,
            position=position,
            name=attr,
            description=description,
            kind=Attribute.Kind.NUMBER if unit else Attribute.Kind.TEXT,
            unit=unit,
            max_tokens=max_tokens,
        )
    return schema


def make_catalog(name: str = "Test shop", shoes: int = 6, coffee: int = 4) -> Catalog:
    catalog = Catalog.objects.create(name=name)
    shoe_schema = make_schema("Shoes", [("Brand", "maker", "", 6), ("Color", "main colour", "", 4)])
    coffee_schema = make_schema("Coffee", [("Brand", "roaster", "", 6), ("Weight", "net weight", "g", 4)])
    products = []
    for i in range(shoes):
        title = SHOE_TITLES[i % len(SHOE_TITLES)]
        products.append(
            Product(catalog=catalog, sku=f"SH-{i:04d}", title=title, category=shoe_schema.category)
        )
    for i in range(coffee):
        title = COFFEE_TITLES[i % len(COFFEE_TITLES)]
        products.append(
            Product(catalog=catalog, sku=f"CF-{i:04d}", title=title, category=coffee_schema.category)
        )
    Product.objects.bulk_create(products)
    return catalog
