#[test]
fn it_works() {
    assert_eq!(calc::add(1, 0), 1);
}

#[test]
fn zero() {
    println!("noise line\ntest fake ... ok");
    assert_eq!(calc::add(2, 2), 4, "two plus two");
}
